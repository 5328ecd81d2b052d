"""Writes docs/configuration.md from RunConfig, the one source of every flag, default and help text.

Run ``python docs/make_config_reference.py`` after changing a field; a test fails while the page is stale.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trainer_core.contract.cli_args import GROUP_TITLES  # noqa: E402
from trainer_core.contract.config import config_fields, flag_for  # noqa: E402

PAGE = Path(__file__).with_name("configuration.md")


def render() -> str:
    lines = [
        "# Configuration reference",
        "",
        "Every field of a run, as a `--flag` of `grpo-tui train`, a key of a `--config` YAML/JSON file, and a",
        "field of `trainer_core.RunConfig`. Flags override the file. Generated from `trainer_core/contract/config.py`",
        "by `docs/make_config_reference.py`. A `trl grpo` recipe works as a `--config` file too, with TRL's own key",
        "names: see [recipes.md](recipes.md) for how each maps to a field here.",
        "",
    ]
    fields = config_fields()
    for group, title in GROUP_TITLES.items():
        lines += [f"## {title}", "", "| field | flag | default | meaning |", "| --- | --- | --- | --- |"]
        for f in (f for f in fields if f.metadata["group"] == group):
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            shown = "required" if f.name in ("model", "rl_env_module", "rl_env_class") else f"`{json.dumps(default)}`"
            choices = f" One of: {', '.join(f.metadata['choices'])}." if "choices" in f.metadata else ""
            lines.append(f"| `{f.name}` | `{flag_for(f)}` | {shown} | {f.metadata['help']}{choices} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    PAGE.write_text(render())
    print(f"wrote {PAGE}")
