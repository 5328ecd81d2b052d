"""The run's warnings, newest first, with their advice; a banner that critical ones cannot hide behind.

Warnings are the contract's ``HealthWarning`` events (trainer-written and the watcher's alike), and their
severities are drawn in the current theme's colours (``palette.py``), redrawn when the theme changes.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from trainer_core.contract.run.events import HealthWarning

from ..palette import Palette, app_palette
from ..safe_text import clean, clean_line, literal


def warning_text(w: HealthWarning, palette: Palette) -> Text:
    text = Text()
    text.append(f"{w.severity.value.upper():8}", style=palette.severity(w.severity, bold=w.severity.alarming))
    text.append(f" {clean_line(w.rule)}", style="bold")
    text.append(f"  step {clean_line(w.step)}\n")
    text.append(f"{clean(w.message)}\n")
    if w.advice:
        text.append("→ ", style="bold")
        text.append(clean(w.advice) + "\n", style="italic")
    return text


class CriticalBanner(Static):
    """Shown across the monitor while a critical warning stands."""

    DEFAULT_CSS = """
    CriticalBanner { display: none; background: $error; color: $text; text-style: bold; padding: 0 1; height: auto; }
    CriticalBanner.-active { display: block; }
    """

    def show(self, warning: HealthWarning | None) -> None:
        self.set_class(warning is not None, "-active")
        if warning is not None:
            self.update(literal(f"CRITICAL {warning.rule} at step {warning.step}: {warning.message}"))


class HealthPanel(VerticalScroll):
    DEFAULT_CSS = """
    HealthPanel { height: 1fr; }
    HealthPanel > Static { margin-bottom: 1; }
    HealthPanel > #none { color: $text-muted; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.shown = 0
        self._warnings: tuple[HealthWarning, ...] = ()

    def compose(self) -> ComposeResult:
        yield Static("No warnings: the health rules see nothing wrong.", id="none")

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._redraw())

    def set_warnings(self, warnings: Sequence[HealthWarning]) -> None:
        """Show every warning (trainer-written and watcher alerts), newest first."""
        self._warnings = tuple(warnings)
        self._redraw()

    def _redraw(self) -> None:
        for child in list(self.children):
            if child.id != "none":
                child.remove()
        warnings = self._warnings
        self.query_one("#none").display = not warnings
        palette = app_palette(self.app)
        self.mount_all(
            [Static(warning_text(w, palette), classes=f"warning {w.severity.value}") for w in reversed(warnings)]
        )
        self.shown = len(warnings)
