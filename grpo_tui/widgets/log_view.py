"""The monitor's Log tab: trainer.log as it grows, colour kept, nothing of it reaching the terminal raw.

A trainer log holds whatever the trainer, the user's environment and their libraries printed: ANSI
colour, progress bars, and text from the data. Lines are shown through ``safe_text.from_ansi`` (SGR
colour as parsed style; links, cursor moves and every other sequence dropped or shown as placeholders).
A line the trainer has written only part of waits for its newline, so it is never shown cut in two.
"""

from __future__ import annotations

from textual.widgets import RichLog

from ..safe_text import from_ansi


class LogView(RichLog):
    DEFAULT_CSS = "LogView { height: 1fr; }"

    def __init__(self, *, max_lines: int = 5000, id: str | None = None):
        super().__init__(max_lines=max_lines, wrap=False, markup=False, highlight=False, id=id)
        self._pending = ""

    def add(self, text: str) -> None:
        """Append what was read from the log since the last call."""
        text = self._pending + text
        complete, _, self._pending = text.rpartition("\n")
        if complete:
            self.write(from_ansi(complete), scroll_end=None)

    @property
    def plain(self) -> str:
        """What the tab shows, as text (for the tests and for copying)."""
        return "\n".join(strip.text for strip in self.lines)
