"""The newest scored completions: reward, prompt and completion side by side; for an agentic run, how many
turns and tool calls each episode took. Enter opens the selected one as a transcript (screens/transcript.py)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from ..safe_text import literal
from .transcript import episode_summary


def _one_line(text: object, width: int) -> Text:
    flat = " ".join(str(text).split())
    return literal(flat if len(flat) <= width else flat[: width - 1] + "…", end="")


class CompletionsTable(DataTable):
    DEFAULT_CSS = "CompletionsTable { height: 1fr; }"

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.samples: list[dict] = []  # newest first, as the rows are
        self.add_columns("step", "reward", "episode", "prompt", "completion")

    def set_samples(self, samples: list[dict]) -> None:
        self.clear()
        self.samples = list(reversed(samples))
        for s in self.samples:
            reward = s.get("reward")
            shown = f"{reward:.3f}" if isinstance(reward, (int, float)) else "-"
            self.add_row(
                _one_line(s.get("step", ""), 12),
                shown,
                _one_line(episode_summary(s), 34),
                _one_line(s.get("prompt", ""), 30),
                _one_line(s.get("completion", ""), 60),
            )

    def selected(self) -> dict | None:
        """The sample of the row under the cursor."""
        row = self.cursor_row
        return self.samples[row] if 0 <= row < len(self.samples) else None
