"""One sampled episode, opened from the Completions tab (Enter on a row): its transcript, scrollable."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label

from ..safe_text import literal
from ..widgets.transcript import TranscriptView, episode_summary


class TranscriptScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,enter", "dismiss", "Close")]
    DEFAULT_CSS = """
    TranscriptScreen { align: center middle; }
    TranscriptScreen > Vertical { width: 90%; height: 85%; border: thick $primary; background: $surface; }
    TranscriptScreen #title { text-style: bold; padding: 0 1; }
    TranscriptScreen VerticalScroll { padding: 0 1; }
    """

    def __init__(self, sample: dict):
        super().__init__()
        self.sample = sample

    def compose(self) -> ComposeResult:
        with Vertical():
            title = episode_summary(self.sample) or "completion"
            yield Label(literal(f"episode: {title}  (Esc closes)"), id="title")
            with VerticalScroll():
                yield TranscriptView(self.sample, id="transcript")
