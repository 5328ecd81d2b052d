"""Writes docs/configuration.md from RunConfig, the one source of every flag, default and help text.

Run ``python docs/make_config_reference.py`` after changing a field; a test fails while the page is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grpo_tui.config_flags import GROUP_TITLES
from grpo_tui.field_spec import field_specs

PAGE = Path(__file__).with_name("configuration.md")


def render() -> str:
    lines = [
        "# Configuration reference",
        "",
        "Every field of a run, as a `--flag` of `grpo-tui train`, a key of a `--config` YAML/JSON file, and a",
        "field of `trainer_core.RunConfig`. Flags override the file. Generated from `trainer_core/contract/config/run_config.py`",
        "by `docs/make_config_reference.py`. A `trl grpo` recipe works as a `--config` file too, with TRL's own key",
        "names: see [recipes.md](recipes.md) for how each maps to a field here.",
        "",
    ]
    specs = field_specs()
    for group, title in GROUP_TITLES.items():
        lines += [f"## {title}", "", "| field | flag | default | meaning |", "| --- | --- | --- | --- |"]
        for spec in (s for s in specs if s.group == group):
            shown = "required" if spec.required else f"`{json.dumps(spec.default)}`"
            choices = f" One of: {', '.join(spec.choices)}." if spec.choices else ""
            lines.append(f"| `{spec.name}` | `{spec.flag}` | {shown} | {spec.help}{choices} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    PAGE.write_text(render())
    print(f"wrote {PAGE}")
