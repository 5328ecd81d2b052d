"""Every run in the runs dir: status, step, last reward, warnings; open, stop, compare, start a new one.

Runs of the hosts in the hosts file are listed with them (a host column): each host is asked by its own
worker through its executor (``executors/``, one per host, held by the app), so a slow or unreachable host
delays nothing else and shows its error in the hosts line. Opening, stopping and resuming a run go through
the executor of its host, whichever it is: a remote run opens in the monitor through a local copy of its
folder (``executors/mirror.py``), and every stop is reported as ``executors.base.judge_stop`` says.
Extending a run (``e``, or ``u`` on a completed run) asks for the new max steps (``extend.py``) and resumes
it through its executor, as ``grpo-tui launch --resume RUN --max-steps N`` does. Rolling a run back (``b``) asks
which checkpoint and what to change (``rollback.py``) and does it as ``grpo-tui rollback`` does (``rollback_action.py``).

A runs dir may hold thousands of runs, so nothing here rebuilds the list: the worker's ``RunList`` re-reads
only runs whose files changed and posts only when something did (or the user asked), and the table
(``widgets/runs_table.py``) changes only the rows that differ. A first load posts the newest runs as soon
as they are read, so the first paint does not wait for the oldest.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, cast

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Input, Label

from grpo_tui.services.catalog.listing import RunList
from grpo_tui.services.lifecycle.stop_request import APP
from grpo_tui.services.records.run_row import RunInfo
from grpo_tui.services.serving.web_mode import control
from trainer_core.contract.run.status import Status

from ..executors.base import Executor, ExecutorError, judge_stop
from ..executors.registry import ExecutorRegistry
from ..safe_text import clean_line, literal
from ..widgets.runs_table import FIRST_ROWS, RunsTable, run_matches
from .confirm import ConfirmScreen
from .extend import ExtendScreen
from .rollback_action import offer_rollback

if TYPE_CHECKING:
    from trainer_core.contract.config.resume_plan import ResumePlan

    from ..app import GrpoApp

REFRESH_SECONDS = 2.0
HOST_REFRESH_SECONDS = 5.0  # a remote list costs the host a grpo-tui start: less often
STABLE_EVERY = 3  # a finished run's files are checked every 3rd refresh (live and new runs: every one)
MAX_COMPARED = 6  # runs marked for compare at once: one colour each (widgets/overlay_chart.py)


class RunsScreen(Screen):
    AUTO_FOCUS = "#runs"  # the table, not the (hidden) filter box above it
    BINDINGS = [
        Binding("enter", "open", "Open", show=True),
        Binding("n", "new_run", "New run"),
        Binding("slash", "filter", "Filter", tooltip="Show only the runs whose id, name, tags, project or model match"),
        Binding("s", "stop", "Stop"),
        Binding("u", "resume", "Resume"),
        Binding("e", "extend", "Extend"),
        Binding("b", "rollback", "Roll back…", tooltip="Go back to a checkpoint and on, with changed settings"),
        Binding("space", "mark", "Mark for compare"),
        Binding("c", "compare", "Compare"),
        Binding("r", "refresh", "Refresh"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]
    DEFAULT_CSS = """
    RunsScreen #title { padding: 0 1; background: $panel; width: 100%; }
    RunsScreen DataTable { height: 1fr; }
    RunsScreen #hosts { padding: 0 1; width: 100%; height: auto; }
    RunsScreen #filter { display: none; border: none; height: 1; padding: 0 1; }
    """

    class Loaded(Message):
        """Every run, newest first, and the ids of the runs that are new or changed, or gone. ``partial``: the
        newest runs of a first load, the rest still being read."""

        def __init__(
            self,
            runs: list[RunInfo],
            changed: frozenset[str] = frozenset(),
            removed: frozenset[str] = frozenset(),
            partial: bool = False,
        ):
            super().__init__()
            self.runs, self.changed, self.removed, self.partial = runs, changed, removed, partial

    class HostLoaded(Message):
        """One host's runs, or why they could not be read."""

        def __init__(self, host: str, runs: list[RunInfo] | None, error: str | None = None):
            super().__init__()
            self.host, self.runs, self.error = host, runs, error

    class Done(Message):
        """A stop or resume worker finished: what to tell the user, the run it was of, and whether to open it."""

        def __init__(self, text: str, run: RunInfo, error: bool = False, open_run: bool = False):
            super().__init__()
            self.text, self.run, self.error, self.open_run = text, run, error, open_run

    def __init__(self, runs_dir, executors: ExecutorRegistry | None = None):
        super().__init__()
        self.runs_dir = runs_dir
        self.executors = executors if executors is not None else ExecutorRegistry(runs_dir, {})
        self.hosts = self.executors.hosts
        self.local_runs: list[RunInfo] = []
        self.host_runs: dict[str, list[RunInfo]] = {}
        self.host_errors: dict[str, str] = {}
        self._polling: set[str] = set()  # hosts whose list is being read
        self.runs: list[RunInfo] = []
        self.marked: list[str] = []
        self._list = RunList(runs_dir, stable_every=STABLE_EVERY)
        self._list_lock = threading.Lock()  # one refresh at a time, and its message posted in order
        self._title = ""
        self._read = False  # whether the list was read since the screen was mounted
        self.query_text = ""  # the filter (/): only runs whose id, name, tags, project or model match it

    def compose(self) -> ComposeResult:
        yield Label(literal(f"runs in {self.runs_dir}"), id="title")
        if self.hosts:
            yield Label(literal("hosts: " + "  ".join(f"{name} …" for name in self.hosts)), id="hosts")
        yield Input(placeholder="filter: id, name, tags, project, model (escape clears)", id="filter")
        yield RunsTable(hosts=bool(self.hosts), id="runs")
        yield Footer()

    def on_mount(self) -> None:
        if self.shown and not self._read:
            self._read_first()
        self.set_interval(REFRESH_SECONDS, self._refresh_shown)
        if self.hosts:
            self.set_interval(HOST_REFRESH_SECONDS, self._poll_shown)

    def _read_first(self) -> None:
        self._read = True
        self.load(force=True)
        self.poll_hosts()

    # Under another screen (a monitor, the form) the list is not read: nobody sees it, and a host's list costs
    # that host a grpo-tui start. Coming back reads it at once. An app opened on a monitor (`grpo-tui watch`)
    # reads it the first time it is shown, not while the monitor reads its run.
    @property
    def shown(self) -> bool:
        """On top, or under dialogs only."""
        stack = self.app.screen_stack
        return self in stack and all(isinstance(s, ModalScreen) for s in stack[stack.index(self) + 1 :])

    def _refresh_shown(self) -> None:
        if self.shown:
            self.load()

    def _poll_shown(self) -> None:
        if self.shown:
            self.poll_hosts()

    def on_screen_resume(self) -> None:
        if not self.shown:  # pushed and covered at once (the app opened on a monitor)
            return
        if not self._read:
            self._read_first()
        elif self._title:  # not the first time it is shown: on_mount has just read everything
            self.load()
            self.poll_hosts()

    @property
    def grpo(self) -> GrpoApp:
        return cast("GrpoApp", self.app)

    def executor(self, run: RunInfo) -> Executor:
        """The executor of the host ``run`` is on (this machine's for a local run)."""
        return self.executors.get(run.host)

    def poll_hosts(self) -> None:
        for name in self.hosts:
            self.poll_host(name)

    def poll_host(self, name: str) -> None:
        if name not in self._polling:
            self._polling.add(name)
            self.read_host(name)

    @work(thread=True, exit_on_error=False)
    def read_host(self, name: str) -> None:
        try:
            listed = self.executors.get(name).list_runs()  # error: the rows it sent that were left out
            runs, error = listed.runs, listed.error
        except ExecutorError as exc:
            runs, error = None, str(exc)
        except Exception as exc:  # a host that answers nonsense must not take the screen down
            runs, error = None, f"host {name}: {exc}"
        self.post_message(self.HostLoaded(name, runs, error))

    def on_runs_screen_host_loaded(self, message: HostLoaded) -> None:
        self._polling.discard(message.host)
        if message.error is not None:
            self.host_errors[message.host] = message.error
        else:
            self.host_errors.pop(message.host, None)
        if message.runs is None:
            changed = frozenset()  # its last known runs stay listed
        else:
            old = {r.key: r for r in self.host_runs.get(message.host, [])}
            self.host_runs[message.host] = message.runs
            changed = frozenset(r.key for r in message.runs if old.get(r.key) != r)
            if not changed and old.keys() == {r.key for r in message.runs}:
                self._show_hosts()
                return
        self._show(changed, frozenset())
        self._show_hosts()

    def _show_hosts(self) -> None:
        parts = []
        for name in self.hosts:
            if name in self.host_errors:
                parts.append(f"{name} ✗ {self.host_errors[name]}")
            elif name in self.host_runs:
                parts.append(f"{name} ✓ {len(self.host_runs[name])} runs")
            else:
                parts.append(f"{name} …")
        self.query_one("#hosts", Label).update(literal("hosts: " + "  ·  ".join(clean_line(p) for p in parts)))

    def _show(self, changed: frozenset, removed: frozenset, partial: bool = False) -> None:
        remote = [run for name in self.hosts for run in self.host_runs.get(name, [])]
        runs = (
            self.local_runs if not remote else sorted([*self.local_runs, *remote], key=lambda r: r.run_id, reverse=True)
        )
        self.runs = runs
        shown = [run for run in runs if run_matches(run, self.query_text)] if self.query_text else runs
        self.query_one(RunsTable).show(shown, changed | removed, partial)

    # -- the filter -------------------------------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if not box.display:
            return
        box.display = False
        box.value = ""  # its Changed message shows every run again
        self._filter("")
        self.query_one(RunsTable).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self._filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            self.query_one(RunsTable).focus()

    def _filter(self, text: str) -> None:
        if text.strip() == self.query_text:
            return
        self.query_text = text.strip()
        self._show(frozenset(), frozenset())

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False)
    def load(self, force: bool = False) -> None:
        """Refresh the list; post it when something changed (or ``force``: a load the user asked for)."""

        def first_rows(runs: list[RunInfo]) -> None:
            self.post_message(self.Loaded(runs, frozenset(r.run_id for r in runs), partial=True))

        with self._list_lock:
            update = self._list.refresh(full=force, first=FIRST_ROWS, on_first=first_rows)
            if update or force:
                self.post_message(self.Loaded(update.runs, update.changed, update.removed))

    def on_runs_screen_loaded(self, message: Loaded) -> None:
        self.local_runs = message.runs
        self._show(message.changed, message.removed, message.partial)
        runs, where = message.runs, self.runs_dir
        title = (
            f"runs in {where}  (reading…)"
            if message.partial
            else f"runs in {where}  ({len(runs)})"
            if runs
            else f"no runs in {where} yet: press n to start one"
        )
        if title != self._title:  # an update lays the screen out again: only when it says something new
            self._title = title
            self.query_one("#title", Label).update(literal(title))

    def on_runs_screen_done(self, message: Done) -> None:
        self.notify(
            message.text, severity="error" if message.error else "information", timeout=10 if message.error else 5
        )
        run = message.run
        if message.open_run:
            self.grpo.open_run(self.executor(run), run)
        self.load(force=True)
        if run.host in self.hosts:  # the list the run is in, read again now
            self.poll_host(run.host)

    def _current(self) -> RunInfo | None:
        return self.query_one(RunsTable).selected()

    def action_refresh(self) -> None:
        self.load(force=True)

    def action_open(self) -> None:
        run = self._current()
        if run is not None:
            self.grpo.open_run(self.executor(run), run)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    @control
    def action_new_run(self) -> None:
        self.grpo.open_launch()

    def action_mark(self) -> None:
        run = self._current()
        if run is None:
            return
        if not self.executor(run).folders_here:
            self.notify("Compare works on runs of this machine; open a remote run to see its charts.")
            return
        if run.run_id in self.marked:
            self.marked.remove(run.run_id)
        else:
            self.marked = [*self.marked, run.run_id][-MAX_COMPARED:]
        self.query_one(RunsTable).set_marked(self.marked)

    def action_compare(self) -> None:
        if len(self.marked) < 2:
            self.notify(f"Mark two or more runs (up to {MAX_COMPARED}) with space, then press c to compare them.")
            return
        from .compare import CompareScreen

        here = {r.run_id: r.path for r in self.runs if r.host is None and self.executor(r).folders_here}
        paths = [here[run_id] for run_id in self.marked if run_id in here]  # in the order they were marked
        self.app.push_screen(CompareScreen(paths))

    @control
    def action_stop(self) -> None:
        run = self._current()
        if run is None or not run.status.is_live:
            self.notify("The selected run is not running.")
            return

        def confirmed(ok: bool | None) -> None:
            if ok:
                self._stop(run)

        self.app.push_screen(
            ConfirmScreen(f"Stop run {run.run_id}?", "It finishes the current step and saves a checkpoint."), confirmed
        )

    @control
    def action_resume(self) -> None:
        run = self._current()
        if run is None or not run.status.resumable:
            self.notify("Only a stopped, failed or lost run can be resumed here.")
            return
        if run.status is Status.COMPLETED:  # it can only go on to a higher max steps: ask for them
            self.action_extend()
            return

        def confirmed(ok: bool | None) -> None:
            if ok:
                self._resume(run)

        self.app.push_screen(
            ConfirmScreen(
                f"Resume run {run.run_id}?",
                "It continues from its newest checkpoint in the same folder; steps and events carry on.",
            ),
            confirmed,
        )

    @control
    def action_extend(self) -> None:
        """Resume the selected ended run up to a new max steps (default: its old total + 50 %)."""
        run = self._current()
        if run is None or not run.status.resumable:
            self.notify("Only an ended (completed, stopped, failed) or lost run can be resumed and extended.")
            return

        def answered(max_steps: int | None) -> None:
            if max_steps is not None:
                self._resume(run, max_steps)

        self.app.push_screen(ExtendScreen(run.run_id, run.step or 0, run.total, str(run.status)), answered)

    @control
    def action_rollback(self) -> None:
        """Roll the selected run back to one of its checkpoints, with changed settings (a live one is stopped first)."""
        run = self._current()
        if run is not None:
            offer_rollback(self, self.executor(run), run, run.status)

    @work(thread=True, group="resume", exit_on_error=False)
    def _resume(self, run: RunInfo, max_steps: int | None = None) -> None:
        """Resume through the run's executor (on its host, for a remote run); ``max_steps`` extends it. It refuses,
        saying why, before writing anything; a resume planned here says its plan, and the run's monitor opens."""
        executor = self.executor(run)
        plans: list[ResumePlan] = []
        try:
            executor.resume(run, max_steps=max_steps, on_plan=plans.append)
        except ExecutorError as exc:
            self.post_message(self.Done(str(exc), run, error=True))
            return
        on = f" on {executor.host_name}" if executor.host_name else ""
        to = f" to {max_steps} steps" if max_steps is not None else ""
        said = plans[0].message if plans else f"resumed run {run.run_id}{on}{to}"
        self.post_message(self.Done(said, run, open_run=True))

    @work(thread=True, group="stop", exit_on_error=False)
    def _stop(self, run: RunInfo) -> None:
        try:
            outcome = self.executor(run).stop(run, by=APP)
        except ExecutorError as exc:
            self.post_message(self.Done(str(exc), run, error=True))
            return
        verdict = judge_stop(outcome)
        self.post_message(self.Done(verdict.message, run, error=verdict.failed))
