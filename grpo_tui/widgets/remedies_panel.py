"""The monitor's Remedies panel: each time the run went back to a checkpoint, who asked, why and what changed.

A run rolled back by someone (``grpo-tui rollback``, the app's Roll back…, an MCP client) or by itself (a health
rule's remedy) goes on in the same folder. The charts draw the abandoned stretch faint; this panel says what
happened there, one line per ``rewound`` event (run/rewinds.py): from which step to which checkpoint, by whom
(user, rule, mcp, viewer), the rule if any, the reason and the settings changed (``lr 1e-5 → 5e-6``). It stays
hidden until the run has a rewind. Every word of it comes from the run folder: shown literally, cleaned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual.widgets import Static

from trainer_core.contract.run.events import Rewound

from ..safe_text import clean_line

MAX_LINES = 4  # the newest rewinds shown; the title counts them all
_EXPONENT = re.compile(r"e([+-])0+(\d)")


def setting_value(value: Any) -> str:
    """A setting's value as a person writes it: ``1e-5``, ``0.2``, ``true``, ``unset`` for none."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _EXPONENT.sub(r"e\1\2", f"{value:g}")
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), default=str)
    return str(value)


def change_text(changes: dict) -> str:
    """``lr 1e-5 → 5e-6, rl_kl_coef 0.1 → 0.2``; ``no setting changed`` when none."""
    parts = []
    for name, change in changes.items():
        if isinstance(change, dict):
            parts.append(f"{name} {setting_value(change.get('from'))} → {setting_value(change.get('to'))}")
    return ", ".join(parts) or "no setting changed"


def rewind_line(rewind: Rewound) -> str:
    """One rewind: ``step 38 → checkpoint-20 (step 20) · by rule kl_explosion · "why" · rl_kl_coef 0.1 → 0.2``."""
    where = rewind.checkpoint or f"checkpoint-{rewind.to_step}"
    who = f"by {rewind.by}" + (f" {rewind.rule}" if rewind.rule else "")
    parts = [f"step {rewind.from_step} → {where} (step {rewind.to_step})", who]
    if rewind.reason:
        parts.append(f'"{rewind.reason}"')
    parts.append(change_text(rewind.changes))
    return clean_line(" · ".join(parts))


def remedies_text(rewinds: list[Rewound]) -> Text:
    """The title (how many rewinds) and a line for each of the newest ``MAX_LINES``, oldest first."""
    count = len(rewinds)
    title = f"↺ Remedies: went back {count} time{'s' if count != 1 else ''}"
    hidden = count - MAX_LINES
    if hidden > 0:
        title += f" (the {hidden} oldest not shown)"
    text = Text(title, style="bold")
    for rewind in rewinds[-MAX_LINES:]:
        text.append("\n")
        text.append(rewind_line(rewind))
    return text


class RemediesPanel(Static):
    """The run's rewinds, as the reader finds them; hidden while there are none."""

    DEFAULT_CSS = """
    RemediesPanel { display: none; height: auto; padding: 0 1; background: $panel; border-left: thick $warning; }
    """

    def __init__(self, *, id: str | None = None):
        super().__init__(id=id, markup=False)
        self.rewinds: list[Rewound] = []

    def add(self, rewinds: Iterable[Rewound]) -> None:
        """Rewinds read since the last call, in the order they were written."""
        new = list(rewinds)
        if not new:
            return
        self.rewinds.extend(new)
        self.update(remedies_text(self.rewinds))
        self.display = True

    @property
    def text(self) -> str:
        """What the panel shows, as plain text ('' while hidden)."""
        return remedies_text(self.rewinds).plain if self.rewinds else ""
