"""A yes/no question that must be answered before something irreversible happens.

The dialog fits an 80x24 terminal, and its labels take the dialog's width so that their text wraps inside it: a
Label's default ``width: auto`` measures one line of the whole text and cuts it at the border.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from ..safe_text import literal


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 64; max-width: 100%; height: auto; max-height: 100%;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    ConfirmScreen Label { width: 100%; }
    ConfirmScreen #question { text-style: bold; margin-bottom: 1; }
    ConfirmScreen Horizontal { height: auto; margin-top: 1; }
    ConfirmScreen Button { margin-right: 2; }
    """

    def __init__(self, question: str, detail: str = ""):
        super().__init__()
        self.question = question
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(literal(self.question), id="question")
            yield Label(literal(self.detail), id="detail")
            with Horizontal():
                yield Button("Yes (y)", variant="error", id="yes")
                yield Button("No (n)", variant="primary", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)
