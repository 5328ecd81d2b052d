"""Every run in the runs dir: status, step, last reward, warnings; open, stop, compare, start a new one."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label

from ..formatting import format_duration, format_steps, short_model
from ..palette import app_palette
from ..services.catalog import RunInfo, list_runs
from .confirm import ConfirmScreen

REFRESH_SECONDS = 2.0


class RunsScreen(Screen):
    BINDINGS = [
        Binding("enter", "open", "Open", show=True),
        Binding("n", "new_run", "New run"),
        Binding("s", "stop", "Stop"),
        Binding("u", "resume", "Resume"),
        Binding("space", "mark", "Mark for compare"),
        Binding("c", "compare", "Compare"),
        Binding("r", "refresh", "Refresh"),
    ]
    DEFAULT_CSS = """
    RunsScreen #title { padding: 0 1; background: $panel; width: 100%; }
    RunsScreen DataTable { height: 1fr; }
    """

    class Loaded(Message):
        def __init__(self, runs: list[RunInfo]):
            super().__init__()
            self.runs = runs

    class Done(Message):
        """A stop or resume worker finished: what to tell the user, and the run to open, if any."""

        def __init__(self, text: str, error: bool = False, open_path=None):
            super().__init__()
            self.text, self.error, self.open_path = text, error, open_path

    def __init__(self, runs_dir):
        super().__init__()
        self.runs_dir = runs_dir
        self.runs: list[RunInfo] = []
        self.marked: list[str] = []

    def compose(self) -> ComposeResult:
        yield Label(f"runs in {self.runs_dir}", id="title")
        yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        # most important first: at 80 columns the last ones scroll off to the right
        for name in ("", "id", "status", "step", "reward", "warnings", "duration", "model", "project"):
            table.add_column(name, key=name or "mark")
        self.load()
        self.set_interval(REFRESH_SECONDS, self.load)

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False)
    def load(self) -> None:
        self.post_message(self.Loaded(list_runs(self.runs_dir)))

    def on_runs_screen_loaded(self, message: Loaded) -> None:
        self._show(message.runs)

    def on_runs_screen_done(self, message: Done) -> None:
        self.notify(message.text, severity="error" if message.error else "information", timeout=10 if message.error else 5)
        if message.open_path is not None:
            self.app.open_monitor(message.open_path)
        self.load()

    def _show(self, runs: list[RunInfo]) -> None:
        self.runs = runs
        table = self.query_one(DataTable)
        selected = table.cursor_row
        table.clear()
        palette = app_palette(self.app)
        for run in runs:
            reward = "-" if run.last_reward is None else f"{run.last_reward:.3f}"
            warnings = f"{run.warnings} ({run.last_warning})" if run.warnings else "0"
            table.add_row("●" if run.run_id in self.marked else " ", run.run_id, Text(str(run.status), style=palette.status(run.status)),
                          format_steps(run.step, run.total), reward, warnings, format_duration(run.duration),
                          short_model(run.model, 24), run.project or "-", key=run.run_id)
        if runs:
            table.move_cursor(row=min(selected, len(runs) - 1))
        self.query_one("#title", Label).update(f"runs in {self.runs_dir}  ({len(runs)})" if runs else
                                               f"no runs in {self.runs_dir} yet: press n to start one")

    def _current(self) -> RunInfo | None:
        table = self.query_one(DataTable)
        if not self.runs or table.cursor_row < 0 or table.cursor_row >= len(self.runs):
            return None
        return self.runs[table.cursor_row]

    def action_refresh(self) -> None:
        self.load()

    def action_open(self) -> None:
        run = self._current()
        if run:
            self.app.open_monitor(run.path)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_new_run(self) -> None:
        self.app.open_launch()

    def action_mark(self) -> None:
        run = self._current()
        if run is None:
            return
        if run.run_id in self.marked:
            self.marked.remove(run.run_id)
        else:
            self.marked = (self.marked + [run.run_id])[-2:]
        self._show(self.runs)

    def action_compare(self) -> None:
        if len(self.marked) != 2:
            self.notify("Mark two runs with space, then press c to compare them.")
            return
        from .compare import CompareScreen

        paths = [r.path for r in self.runs if r.run_id in self.marked]
        self.app.push_screen(CompareScreen(paths))

    def action_stop(self) -> None:
        run = self._current()
        if run is None or not run.status.is_live:
            self.notify("The selected run is not running.")
            return
        self.app.push_screen(ConfirmScreen(f"Stop run {run.run_id}?", "It finishes the current step and saves a checkpoint."),
                             lambda ok: ok and self._stop(run))

    def action_resume(self) -> None:
        run = self._current()
        if run is None or not run.status.resumable:
            self.notify("Only a stopped, failed or lost run can be resumed.")
            return
        self.app.push_screen(ConfirmScreen(f"Resume run {run.run_id}?", "It continues from its newest checkpoint in the "
                                           "same folder; steps and events carry on."),
                             lambda ok: ok and self._resume(run))

    @work(thread=True, group="resume", exit_on_error=False)
    def _resume(self, run: RunInfo) -> None:
        from trainer_core.contract.config import ConfigError
        from trainer_core.contract.run_folder import RunFolder

        from ..services.supervisor import prepare_resume, start_root

        folder = RunFolder(run.path)
        try:
            placement = prepare_resume(folder)
        except ConfigError as exc:
            self.post_message(self.Done(str(exc), error=True))
            return
        start_root(folder, placement)
        self.post_message(self.Done(f"resumed run {run.run_id}", open_path=run.path))

    @work(thread=True, group="stop", exit_on_error=False)
    def _stop(self, run: RunInfo) -> None:
        from trainer_core.contract.run_folder import RunFolder

        from ..services.supervisor import stop_run

        report = stop_run(RunFolder(run.path))
        self.post_message(self.Done(report.describe()))


