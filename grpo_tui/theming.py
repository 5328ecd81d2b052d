"""Themes from ``themes/*.yaml``, registered as Textual themes (selectable with --theme or the palette).

Colours live in the theme files only; stylesheets refer to theme variables ($primary, $error, ...).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from textual.theme import Theme

THEMES_DIR = Path(__file__).resolve().parents[1] / "themes"
DEFAULT_THEME = "grpo-dark"


def load_themes(folder: Path = THEMES_DIR) -> list[Theme]:
    themes = []
    for path in sorted(folder.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        themes.append(Theme(**data))
    return themes
