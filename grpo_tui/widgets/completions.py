"""The newest scored completions: reward, prompt and completion side by side."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from ..safe_text import literal


def _one_line(text: object, width: int) -> Text:
    flat = " ".join(str(text).split())
    return literal(flat if len(flat) <= width else flat[: width - 1] + "…", end="")


class CompletionsTable(DataTable):
    DEFAULT_CSS = "CompletionsTable { height: 1fr; }"

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns("step", "reward", "prompt", "completion")

    def set_samples(self, samples: list[dict]) -> None:
        self.clear()
        for s in reversed(samples):
            reward = s.get("reward")
            shown = f"{reward:.3f}" if isinstance(reward, (int, float)) else "-"
            self.add_row(
                _one_line(s.get("step", ""), 12),
                shown,
                _one_line(s.get("prompt", ""), 30),
                _one_line(s.get("completion", ""), 60),
            )
