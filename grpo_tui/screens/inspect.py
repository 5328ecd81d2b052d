"""The reward-inspection gate: read scored samples of the current config before launching it.

Opens on the inspection already made for this config (same model, environment and sampling), or runs a
new one in a child process. Dismisses with ``("launch", inspection_id)`` after the user has read the
report, ``("skip", None)`` when they deliberately launch without one, or ``None`` to go back.

An inspection that wrote no report (its child crashed) or scored nothing is a failure: the screen says why,
shows the end of its log as literal text, and offers no launch with it (``Inspection.failure``).
"""

from __future__ import annotations

import time
from typing import cast

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, Footer, Label, Static
from textual.worker import get_current_worker

from grpo_tui.services.lifecycle import inspections
from trainer_core.contract.config.run_config import RunConfig

from ..inspect_report import failure_report, report
from ..palette import app_palette
from ..safe_text import literal
from .confirm import ConfirmScreen

DEFAULT_SAMPLES = 64


class InspectScreen(Screen):
    BINDINGS = [
        Binding("ctrl+l", "launch", "Launch"),
        Binding("ctrl+k", "skip", "Skip inspection"),
        Binding("ctrl+r", "rerun", "Inspect again"),
        Binding("escape", "back", "Back"),
    ]
    DEFAULT_CSS = """
    InspectScreen #status { padding: 0 1; background: $panel; width: 100%; }
    InspectScreen #report { height: 1fr; padding: 0 1; }
    InspectScreen Horizontal { height: auto; padding: 0 1; }
    InspectScreen Button { margin-right: 2; }
    """

    class Progress(Message):
        """The inspection worker's news: a status line, or (with ``inspection``) that its child ended with
        ``exit_code``."""

        def __init__(self, text: str, inspection: inspections.Inspection | None = None, exit_code: int | None = None):
            super().__init__()
            self.text = text
            self.inspection = inspection
            self.exit_code = exit_code

    def __init__(self, config: RunConfig, runs_dir, samples: int = DEFAULT_SAMPLES):
        super().__init__()
        self.config = config
        self.runs_dir = runs_dir
        self.samples = samples
        self.inspection: inspections.Inspection | None = None
        self.finished = False  # it scored completions: the report can be read and launched with
        self.failure: str | None = None  # why the inspection is no pass, once it ended without one
        self.report_view = None

    def compose(self) -> ComposeResult:
        yield Label("", id="status")
        with VerticalScroll(id="report"):
            yield Static("", id="body")
        with Horizontal():
            yield Button("Launch with this inspection", variant="success", id="launch", disabled=True)
            yield Button("Skip inspection", variant="warning", id="skip")
            yield Button("Back", id="back")
        yield Footer()

    def on_mount(self) -> None:
        existing = inspections.find_for(self.config, self.runs_dir)
        if existing is not None:
            self.inspection = existing
            self._show(
                existing,
                f"inspection {existing.id}, already made for this model, environment and sampling "
                "(ctrl+r to inspect again)",
            )
        else:
            self.run_inspection()

    def _show(self, inspection: inspections.Inspection, status: str, exit_code: int | None = None) -> None:
        self.failure = inspection.failure(exit_code)
        self.finished = self.failure is None
        summary, records = inspection.summary(), inspection.records()
        palette = app_palette(self.app)
        if self.failure is None:
            self.report_view = report(summary, records, palette)
        else:
            status = (
                f"inspection {inspection.id} failed: {self.failure}. Go back (esc) to fix the config, or inspect "
                "again (ctrl+r)"
            )
            self.report_view = failure_report(self.failure, inspection.log_tail(), summary, records, palette)
        self.query_one("#status", Label).update(literal(status))
        self.query_one("#body", Static).update(self.report_view)
        launch = self.query_one("#launch", Button)
        launch.disabled = not self.finished
        launch.display = self.failure is None
        self.refresh_bindings()

    @work(thread=True, exclusive=True, group="inspect", exit_on_error=False)
    def run_inspection(self) -> None:
        worker = get_current_worker()
        try:
            inspection = inspections.create(self.config, self.runs_dir)
        except (OSError, ValueError) as exc:
            self.post_message(self.Progress(f"cannot inspect: {getattr(exc, 'strerror', None) or exc}"))
            return
        proc = inspections.start(inspection, self.samples)
        started = time.monotonic()
        while proc.poll() is None:
            if worker.is_cancelled:
                proc.terminate()
                return
            lines = inspection.log.read_text(errors="replace").splitlines() if inspection.log.exists() else []
            progress = lines[-1] if lines else "loading the model and the environment"
            self.post_message(
                self.Progress(f"inspecting {self.samples} completions ({time.monotonic() - started:.0f}s): {progress}")
            )
            time.sleep(0.5)
        self.post_message(
            self.Progress(
                f"inspection {inspection.id} finished; read it, then launch (ctrl+l)", inspection, proc.returncode
            )
        )

    def on_inspect_screen_progress(self, message: Progress) -> None:
        if message.inspection is None:
            self.query_one("#status", Label).update(literal(message.text))
        else:
            self.inspection = message.inspection
            self._show(message.inspection, message.text, message.exit_code)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        # every button of this screen has an id
        {"launch": self.action_launch, "skip": self.action_skip, "back": self.action_back}[cast(str, event.button.id)]()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """No launch with an inspection that failed: its key leaves the footer."""
        return self.failure is None if action == "launch" else True

    def action_launch(self) -> None:
        if self.inspection is None or not self.finished:
            self.notify("The inspection has not finished yet.")
            return
        self.dismiss(("launch", self.inspection.id))

    def action_skip(self) -> None:
        def confirmed(ok: bool | None) -> None:
            if ok:
                self.dismiss(("skip", None))

        self.app.push_screen(
            ConfirmScreen(
                "Launch without a reward inspection?",
                "A reward that scores the wrong thing trains the wrong thing cleanly. The run's config will "
                "record that the inspection was skipped.",
            ),
            confirmed,
        )

    def action_rerun(self) -> None:
        self.finished, self.failure = False, None
        launch = self.query_one("#launch", Button)
        launch.disabled, launch.display = True, True
        self.refresh_bindings()
        self.run_inspection()

    def action_back(self) -> None:
        self.workers.cancel_group(self, "inspect")
        self.dismiss(None)
