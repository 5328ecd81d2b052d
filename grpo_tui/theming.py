"""The themes shipped as package data: read here, registered as Textual themes by the app (``app.py``).

Colours live in the theme files only; stylesheets refer to theme variables ($primary, $error, ...) and
widgets and plain output take theirs from ``palette.py``.
"""

from __future__ import annotations

from importlib import resources

import yaml

DEFAULT_THEME = "grpo-dark"
THEMES = resources.files("grpo_tui.resources") / "themes"


def theme_data() -> list[dict]:
    """Every shipped theme's mapping, in name order."""
    files = sorted((f for f in THEMES.iterdir() if f.name.endswith(".yaml")), key=lambda f: f.name)
    return [yaml.safe_load(f.read_text(encoding="utf-8")) for f in files]


def theme_colors(name: str) -> dict[str, str]:
    """A shipped theme's colours by role (primary, warning, error, ...)."""
    for data in theme_data():
        if data.get("name") == name:
            return {k: v for k, v in data.items() if isinstance(v, str) and v.startswith("#")}
    raise LookupError(f"no theme {name!r}; themes: {', '.join(d.get('name', '?') for d in theme_data())}")


def series_variables(name: str = DEFAULT_THEME) -> dict[str, str]:
    """A shipped theme's ``chart-series-N`` variables: what a theme without them (one of Textual's own, chosen
    in the command palette) draws a comparison's runs in."""
    for data in theme_data():
        if data.get("name") == name:
            return {k: v for k, v in (data.get("variables") or {}).items() if k.startswith("chart-series-")}
    raise LookupError(f"no theme {name!r}")


def series_colors(name: str) -> list[str]:
    """A shipped theme's colours for the runs of a comparison (its ``chart-series-N`` variables), in order."""
    variables = series_variables(name)
    return [variables[key] for key in sorted(variables)]
