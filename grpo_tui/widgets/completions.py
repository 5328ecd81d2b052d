"""The newest scored completions: reward, prompt and completion side by side."""

from __future__ import annotations

from textual.widgets import DataTable


def _one_line(text: str, width: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


class CompletionsTable(DataTable):
    DEFAULT_CSS = "CompletionsTable { height: 1fr; }"

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns("step", "reward", "prompt", "completion")

    def set_samples(self, samples: list[dict]) -> None:
        self.clear()
        for s in reversed(samples):
            reward = s.get("reward")
            self.add_row(str(s.get("step", "")), "-" if reward is None else f"{reward:.3f}",
                         _one_line(s.get("prompt", ""), 30), _one_line(s.get("completion", ""), 60))
