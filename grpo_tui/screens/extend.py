"""The new max steps for a run to be resumed and trained further: ``grpo-tui train --resume RUN --max-steps N``.

A completed run can only continue to a higher ``max_steps``, so the runs screen asks for one here. The
default is the run's old total plus half of it, rounded up; the answer must be a whole number above the
run's last step, and anything else is refused in place with a message that names the value and the fix.
The dialog only asks: the runs screen resumes the run through its executor (``Executor.resume``, as the CLI does).
It fits an 80x24 terminal, its labels as wide as the dialog so that their text wraps instead of being cut.
"""

from __future__ import annotations

import math

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from ..safe_text import literal


def default_max_steps(total: int | None, last_step: int) -> int:
    """The old total + 50 % (rounded up), and never at or below the last step."""
    base = total if total and total > 0 else last_step
    return max(math.ceil(base * 1.5), last_step + 1)


def max_steps_problem(text: str, last_step: int, suggestion: int) -> str | None:
    """Why ``text`` is not a max steps above ``last_step`` (None: it is one)."""
    text = text.strip()
    fix = f"enter a whole number above {last_step:,} (the run's last step), e.g. {suggestion}"
    if not text:
        return f"max steps is empty: {fix}."
    try:
        value = int(text)
    except ValueError:
        return f"max steps must be a whole number, got {text!r}: {fix}."
    if value <= last_step:
        return (
            f"max steps {value} is not above step {last_step:,}, the run's last step: enter {last_step + 1} "
            f"or more (e.g. {suggestion})."
        )
    return None


class ExtendScreen(ModalScreen[int | None]):
    """Ask for the new max steps of run ``run_id``; dismissed with it, or with None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    ExtendScreen { align: center middle; }
    ExtendScreen > Vertical {
        width: 72; max-width: 100%; height: auto; max-height: 100%;
        border: thick $primary; background: $surface; padding: 1 2;
    }
    ExtendScreen Label { width: 100%; }
    ExtendScreen #question { text-style: bold; margin-bottom: 1; }
    ExtendScreen #max-steps { margin-top: 1; }
    ExtendScreen #problem { color: $error; height: auto; }
    ExtendScreen Horizontal { height: auto; margin-top: 1; }
    ExtendScreen Button { margin-right: 2; }
    """

    def __init__(self, run_id: str, last_step: int, total: int | None, status: str):
        super().__init__()
        self.run_id, self.last_step, self.total, self.status = run_id, last_step, total, status
        self.suggestion = default_max_steps(total, last_step)

    def compose(self) -> ComposeResult:
        of = f" of {self.total:,}" if self.total else ""
        with Vertical():
            yield Label(literal(f"Resume run {self.run_id} and train it further?"), id="question")
            yield Label(
                literal(
                    f"It is {self.status} at step {self.last_step:,}{of}. It continues from its newest complete "
                    "checkpoint in the same folder, up to the new max steps:"
                ),
                id="detail",
            )
            yield Input(str(self.suggestion), type="integer", placeholder="max steps", id="max-steps")
            yield Label("", id="problem")
            with Horizontal():
                yield Button("Resume (enter)", variant="primary", id="resume")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#max-steps", Input).focus()

    @property
    def problem(self) -> str:
        """The message shown under the input ('' when none)."""
        return str(self.query_one("#problem", Label).visual)

    def submit(self) -> None:
        text = self.query_one("#max-steps", Input).value
        problem = max_steps_problem(text, self.last_step, self.suggestion)
        if problem is not None:
            self.query_one("#problem", Label).update(literal(problem))
            self.query_one("#max-steps", Input).focus()
            return
        self.dismiss(int(text.strip()))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#problem", Label).update("")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "resume":
            self.submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
