"""The run's warnings, newest first, with their advice; a banner that critical ones cannot hide behind."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

SEVERITY_STYLE = {"critical": "bold red", "warn": "bold yellow", "info": "cyan"}


def warning_text(w: dict) -> Text:
    text = Text()
    text.append(f"{w.get('severity', 'warn').upper():8}", style=SEVERITY_STYLE.get(w.get("severity"), ""))
    text.append(f" {w.get('rule')}", style="bold")
    text.append(f"  step {w.get('step')}\n")
    text.append(f"{w.get('message', '')}\n")
    if w.get("advice"):
        text.append("→ ", style="bold")
        text.append(w["advice"] + "\n", style="italic")
    return text


class CriticalBanner(Static):
    """Shown across the monitor while a critical warning stands."""

    DEFAULT_CSS = """
    CriticalBanner { display: none; background: $error; color: $text; text-style: bold; padding: 0 1; height: auto; }
    CriticalBanner.-active { display: block; }
    """

    def show(self, warning: dict | None) -> None:
        self.set_class(warning is not None, "-active")
        if warning is not None:
            self.update(f"CRITICAL {warning.get('rule')} at step {warning.get('step')}: {warning.get('message')}")


class HealthPanel(VerticalScroll):
    DEFAULT_CSS = """
    HealthPanel { height: 1fr; }
    HealthPanel > Static { margin-bottom: 1; }
    HealthPanel > #none { color: $text-muted; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.shown = 0

    def compose(self) -> ComposeResult:
        yield Static("No warnings: the health rules see nothing wrong.", id="none")

    def set_warnings(self, warnings: list[dict]) -> None:
        """Show every warning (trainer-written and watcher alerts), newest first."""
        for child in list(self.children):
            if child.id != "none":
                child.remove()
        self.query_one("#none").display = not warnings
        self.mount_all([Static(warning_text(w), classes=f"warning {w.get('severity')}") for w in reversed(warnings)])
        self.shown = len(warnings)
