"""The monitor: one run's health at a glance — header, charts, warnings, completions, log, GPUs, held-out
evals, checkpoints, Stop, Roll back… (``b``: rollback_action.py), and the run's rewinds (``widgets/remedies_panel.py``).

One worker thread (``follow``) owns the run's ``RunStream``: it reads and folds, and posts ``Updated``
messages carrying frozen values only (``StreamView``, the slow reads, ``ChartData`` when asked for). The UI
keeps its own copies and draws from them, so a metric that first appears mid-run never changes a dict the
UI is looping over. The charts say what they want (widths, window of steps) and the screen puts it as a
frozen ``ChartRequest`` on a queue the reader waits on; the reader then answers it again each time steps
arrive, so the charts redraw with the data. A finished run is read once; the reader then hands over the
stream, which nothing changes any more, to short ``charts`` workers for later requests.

The run is a ``WatchedRun`` (``executors/watched_run.py``): its folder here (the run's own, or a remote run's
mirror), the GPUs of its machine, and its executor, which stops it; a run here and one on a host are handled
alike, and a stop is reported as ``executors.base.judge_stop`` says.

Held-out evals arrive with the lifecycle events (``StreamView.evals``); the screen keeps them by step and hands
them to the reward chart (one metric overlaid, ``v`` pages) and to the Eval tab. The Checkpoints tab's list
is read by a ``checkpoints`` worker once the events on disk are read and whenever a checkpoint or an eval arrives:
the ledger of a run here, the events' list for a run on a host (its mirror holds no checkpoints), built from the
checkpoint and eval events the reader found, so the events file is never read a second time.
"""

from __future__ import annotations

import time
from queue import SimpleQueue
from types import MappingProxyType
from typing import TYPE_CHECKING, cast

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, TabbedContent, TabPane
from textual.worker import get_current_worker

from grpo_tui.services.catalog.checkpoints import CheckpointList, metric_names, read_checkpoints
from grpo_tui.services.catalog.status import run_duration, run_total
from grpo_tui.services.lifecycle.stop_request import APP
from grpo_tui.services.machine.gpus import GPU
from grpo_tui.services.serving.web_mode import control
from grpo_tui.services.stream import reader as run_reader
from grpo_tui.services.stream.backlog import Backlog
from grpo_tui.services.stream.folded import ChartData, ChartRequest, RunStream, StreamView
from grpo_tui.services.stream.reader import Post
from grpo_tui.services.stream.rejected_lines import skipped_notice
from trainer_core.contract.run.events import Checkpoint, Eval, HealthWarning, Rewound
from trainer_core.contract.run.ranking import ranking_metric
from trainer_core.contract.run.rewinds import live
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status

from ..executors.base import ExecutorError, judge_stop
from ..executors.watched_run import WatchedRun
from ..safe_text import clean_line
from ..widgets.chart_grid import ChartGrid
from ..widgets.checkpoints_table import CheckpointsPanel
from ..widgets.completions import CompletionsTable
from ..widgets.eval_panel import EvalPanel
from ..widgets.gpu_panel import GpuPanel
from ..widgets.health_panel import CriticalBanner, HealthPanel
from ..widgets.log_view import LogView
from ..widgets.remedies_panel import RemediesPanel
from ..widgets.run_header import RunHeader
from ..widgets.runs_table import config_label
from .confirm import ConfirmScreen
from .rollback_action import offer_rollback
from .transcript import TranscriptScreen

if TYPE_CHECKING:
    from ..app import GrpoApp

HEADER_SECONDS = 0.5


class MonitorScreen(Screen):
    BINDINGS = [
        Binding("s", "stop", "Stop"),
        Binding("f", "force_stop", "Force stop"),
        Binding("b", "rollback", "Roll back…", tooltip="Go back to a checkpoint and on, with changed settings"),
        Binding("m", "next_metric", "Next metric"),
        Binding("v", "next_eval_metric", "Eval metric", tooltip="Overlay the next held-out metric on the reward chart"),
        Binding("plus,equals_sign", "zoom(1)", "Zoom", key_display="+"),
        Binding("minus", "zoom(-1)", "Zoom out", show=False),
        Binding("0", "zoom(0)", "All steps", show=False),
        Binding("e", "smooth", "EMA"),
        Binding("left_square_bracket", "cursor(-1)", "Cursor left", show=False),
        Binding("right_square_bracket", "cursor(1)", "Cursor right", show=False),
        Binding("c", "hide_cursor", "Hide cursor", show=False),
        Binding("1", "tab('charts')", "Charts", show=False),
        Binding("2", "tab('warnings')", "Warnings", show=False),
        Binding("3", "tab('completions')", "Completions", show=False),
        Binding("4", "tab('log')", "Log", show=False),
        Binding("5", "tab('gpu')", "GPU", show=False),
        Binding("6", "tab('eval')", "Eval", show=False),
        Binding("7", "tab('checkpoints')", "Checkpoints", show=False),
        Binding("escape", "app.pop_screen", "Back"),
    ]
    DEFAULT_CSS = """
    MonitorScreen { overflow: hidden; }
    MonitorScreen TabbedContent, MonitorScreen ContentSwitcher, MonitorScreen TabPane { height: 1fr; }
    MonitorScreen TabPane { padding: 0; }
    """

    class Updated(Message):
        def __init__(self, post: Post):
            super().__init__()
            self.post = post

    class ChartsReady(Message):
        def __init__(self, charts: ChartData):
            super().__init__()
            self.charts = charts

    class CheckpointsRead(Message):
        def __init__(self, listed: CheckpointList):
            super().__init__()
            self.listed = listed

    def __init__(self, watched: WatchedRun):
        super().__init__()
        folder = watched.folder  # for a run on another host: its copy here, kept current
        self.watched, self.folder = watched, folder
        self.gpus_shown: list[GPU] | None = None
        self.config = folder.read_config()
        self.status = Status.STARTING
        # the UI's own copies of what the reader posted
        self.view, self.state = StreamView(), MappingProxyType({})
        self.warnings: list[HealthWarning] = []  # the trainer's, from the events
        self.alerts: tuple[HealthWarning, ...] = ()  # the watcher's (stall, crash cause)
        self.shown_alerts = None  # the watcher alerts the warnings tab last drew
        self.stop_requested = False
        self.loaded = False  # warnings already on disk when the screen opens are listed, not popped up
        self.header_drawn_at = 0.0
        self.last_sample: dict | None = None
        self.skipped_noticed: set[str] = set()  # files whose skipped lines were noticed (once per file)
        self.evals: dict[int, Eval] = {}  # the held-out evals read so far, by step (a repeated step: the latest)
        self.ledger_events: list[Checkpoint | Eval | Rewound] = []  # the ledger's events read so far, in order
        self.eval_names: list[str] = []  # their metrics (``NAME``, ``NAME/pass@K``), task metrics first
        self._requests: SimpleQueue[ChartRequest] = SimpleQueue()  # to the reader
        self._asked: ChartRequest | None = None
        self._final: RunStream | None = None
        self._backlog = Backlog(folder)  # a long one is read by a child process from now, while the app starts

    @property
    def kl_measured(self) -> bool:
        return self.config.get("rl_kl_coef", 0.1) != 0

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield CriticalBanner(id="banner")
        yield RemediesPanel(id="remedies")
        with TabbedContent(initial="charts"):
            with TabPane("1 Charts", id="charts"):
                yield ChartGrid(self.kl_measured, id="chart-grid")
            with TabPane("2 Warnings", id="warnings"):
                yield HealthPanel(id="health")
            with TabPane("3 Completions", id="completions"):
                yield CompletionsTable(id="samples")
            with TabPane("4 Log", id="log"):
                yield LogView(id="log-view", max_lines=5000)
            with TabPane("5 GPU", id="gpu"):
                yield GpuPanel(id="gpus")
            with TabPane("6 Eval", id="eval"):
                yield EvalPanel(id="eval-panel")
            with TabPane("7 Checkpoints", id="checkpoints"):
                yield CheckpointsPanel(where=self.watched.executor.where, id="checkpoints-panel")
        yield Footer()

    def on_mount(self) -> None:
        host = self.watched.executor.host_name
        if host:
            self.sub_title = clean_line(f"on {host}")
        self._show_gpus()
        self.follow()
        self.grid.want()  # so the reader has the charts' widths before its first read ends

    def on_unmount(self) -> None:
        self._backlog.close()
        self.watched.close()

    def _show_gpus(self) -> None:
        gpus = self.watched.gpus()
        if gpus != self.gpus_shown:
            self.gpus_shown = gpus
            self.query_one("#gpus", GpuPanel).show(gpus, where=self.watched.executor.where)

    # -- the reader (a worker thread) -------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="tail", exit_on_error=False)
    def follow(self) -> None:
        worker = get_current_worker()

        def post(post: Post) -> None:
            self.post_message(self.Updated(post))

        run_reader.follow(self.folder, self.config, self._requests, post, lambda: worker.is_cancelled, self._backlog)

    @work(thread=True, exclusive=True, group="checkpoints", exit_on_error=False)
    def read_checkpoints(self, events: tuple[Checkpoint | Eval | Rewound, ...]) -> None:
        """The Checkpoints tab's list: the ledger (sizes, torn ones), or the events' list for a remote run; from
        the checkpoint, eval and rewound events the reader has read (the events file is not read again)."""
        remote = self.watched.executor.host_name is not None
        listed = read_checkpoints(self.folder.path, from_events=remote, events=events)
        if not get_current_worker().is_cancelled:
            self.post_message(self.CheckpointsRead(listed))

    @work(thread=True, exclusive=True, group="charts", exit_on_error=False)
    def answer_charts(self, stream: RunStream, request: ChartRequest) -> None:
        """Charts from a stream read to its end (the reader has stopped; nothing changes it any more)."""
        charts = stream.charts(request)
        if not get_current_worker().is_cancelled:
            self.post_message(self.ChartsReady(charts))

    # -- the UI thread ----------------------------------------------------------------------------------

    def _show_slow(self, slow) -> None:
        """The once-a-second reads: status, state, alerts, samples, the log and the GPUs."""
        if slow.status is not self.status:
            self.refresh_bindings()  # Stop leaves the footer once the run has ended
        self.status, self.state, self.alerts = slow.status, slow.state, slow.alerts
        if slow.samples and slow.samples[-1] != self.last_sample:
            self.last_sample = slow.samples[-1]
            self.query_one("#samples", CompletionsTable).set_samples(list(slow.samples))
        if slow.log_text:
            self.query_one("#log-view", LogView).add(slow.log_text)
        self._show_gpus()

    def on_monitor_screen_updated(self, message: Updated) -> None:
        post = message.post
        slow, view = post.slow, post.view
        first = not self.loaded and not post.preview  # the events on disk when the screen opened are read
        if slow:
            self._show_slow(slow)
        grid = self.grid
        if view.keys != self.view.keys:
            grid.set_keys(view.keys)
        self.view = view
        rewinds = [e for e in view.lifecycle if isinstance(e, Rewound)]
        self.query_one("#remedies", RemediesPanel).add(rewinds)
        for rewind in rewinds:  # the live history (run/rewinds.py): what came past its step is abandoned
            self.warnings = [w for w in self.warnings if w.step <= rewind.to_step]
            self.evals = {step: e for step, e in self.evals.items() if step <= rewind.to_step}
        self.warnings.extend(view.warnings)
        if view.evals or rewinds:
            self._add_evals(tuple(e for e in live(view.lifecycle) if isinstance(e, Eval)))
        ledger = [e for e in view.lifecycle if isinstance(e, (Checkpoint, Eval, Rewound))]
        self.ledger_events.extend(ledger)
        if ledger or first:  # listed once the events read so far are known, and again with each new one
            self.read_checkpoints(tuple(self.ledger_events))
        if view.warnings or rewinds or (slow and slow.alerts != self.shown_alerts):
            if slow:
                self.shown_alerts = slow.alerts
            self._show_warnings(view.warnings)
        if post.charts is not None or view.warnings or rewinds:
            grid.draw(post.charts, self._markers())
        if view.metrics_read or slow:
            if slow or time.monotonic() - self.header_drawn_at >= HEADER_SECONDS:
                self._refresh_header()
        if post.final is not None:
            self._final = post.final
            if self._asked is not None and self._asked.serial > grid.data.request.serial:
                self._ask_charts(self._asked)  # asked for after the reader's last look at its queue
        self._notice_skipped(view.skipped, view.skipped_where)
        if slow:
            self._notice_skipped(slow.samples_skipped, slow.samples_where)
        self.loaded = self.loaded or not post.preview

    def _notice_skipped(self, count: int, where: str | None) -> None:
        """One notice per file with lines that were skipped (not JSON objects, fields of the wrong kind): how many
        and where the first is. Every other line is shown."""
        file = (where or "").partition(" ")[0]
        if not count or not where or file in self.skipped_noticed:
            return
        self.skipped_noticed.add(file)
        self.notify(skipped_notice(count, where), severity="warning", timeout=15)

    def _add_evals(self, evals: tuple[Eval, ...]) -> None:
        if not self.evals:
            self.refresh_bindings()  # the first eval shows ``v`` in the footer
        for event in evals:
            self.evals[event.step] = event
        self.eval_names = metric_names(self.evals.values())
        metric = ranking_metric(self.config.get("keep_best"), self.evals.values())
        self.query_one("#eval-panel", EvalPanel).show(dict(self.evals), self.eval_names, metric)
        self.grid.set_evals(self.evals, self.eval_names, default=metric)

    def on_monitor_screen_checkpoints_read(self, message: CheckpointsRead) -> None:
        self.query_one("#checkpoints-panel", CheckpointsPanel).show(message.listed, self.eval_names)

    @property
    def grid(self) -> ChartGrid:
        return self.query_one("#chart-grid", ChartGrid)

    @property
    def charts(self) -> ChartData:
        """What the charts last drew."""
        return self.grid.data

    @property
    def extra_keys(self) -> list[str]:
        return self.grid.extra_keys

    @property
    def extra_index(self) -> int:
        return self.grid.extra_index

    def on_monitor_screen_charts_ready(self, message: ChartsReady) -> None:
        self.grid.draw(message.charts)

    def on_chart_grid_wanted(self, message: ChartGrid.Wanted) -> None:
        serial = (self._asked.serial if self._asked else 0) + 1
        self._ask_charts(ChartRequest(serial, message.widths, message.window))

    def _ask_charts(self, request: ChartRequest) -> None:
        """Tell the reader which series to snapshot; it answers again whenever steps arrive."""
        self._asked = request
        if self._final is None:
            self._requests.put(request)
        else:
            self.answer_charts(self._final, request)

    def _all_warnings(self) -> list[HealthWarning]:
        return [*self.warnings, *self.alerts]

    def _show_warnings(self, new: tuple[HealthWarning, ...]) -> None:
        warnings = self._all_warnings()
        self.query_one("#health", HealthPanel).set_warnings(warnings)
        critical = [w for w in warnings if w.severity is Severity.CRITICAL]
        self.query_one("#banner", CriticalBanner).show(critical[-1] if critical else None)
        for w in new if self.loaded else ():
            if w.severity is Severity.CRITICAL:
                cast("GrpoApp", self.app).alert_critical(str(w.rule), w.step, w.message)
            if w.severity.alarming:
                self.notify(
                    f"{w.rule}: {w.message}",
                    title=f"step {w.step}",
                    severity="error" if w.severity is Severity.CRITICAL else "warning",
                    timeout=8,
                )

    def _markers(self) -> list[int]:
        return [w.step for w in self.warnings if w.severity.alarming]

    def _refresh_header(self) -> None:
        self.header_drawn_at = time.monotonic()
        view, state = self.view, self.state
        last_time = view.last.time if view.last is not None else None
        self.query_one("#header", RunHeader).show(
            self.folder.run_id,
            self.config.get("model"),
            self.status,
            view.step,
            run_total(dict(state), self.config),
            run_duration(dict(state), self.status, last_event_time=last_time),
            view.steps_per_s,
            view.tokens_per_s,
            label=config_label(self.config),
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if isinstance(event.data_table, CompletionsTable) and (sample := event.data_table.selected()) is not None:
            self.app.push_screen(TranscriptScreen(sample))

    def action_next_metric(self) -> None:
        self.grid.extra_index += 1
        self.grid.want()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The footer offers what applies to the run on screen: ``v`` once it has evals to overlay (the Eval tab
        says why when it has none), stopping only while it is live."""
        if action == "next_eval_metric":
            return bool(self.evals)
        if action in ("stop", "force_stop"):
            return self.status.is_live
        return True

    def action_next_eval_metric(self) -> None:
        self.grid.next_eval_metric()

    def action_zoom(self, direction: int) -> None:
        self.grid.zoom(direction)

    def action_smooth(self) -> None:
        self.grid.toggle_smooth()

    def action_cursor(self, cells: int) -> None:
        self.grid.move_cursor(cells)

    def action_hide_cursor(self) -> None:
        self.grid.hide_cursor()

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """A tab opened by its key or a click hands the keys to what it shows: Enter on a completion opens it,
        the arrows move through the log or the ledger."""
        pane = event.pane
        target = next((w for w in pane.query("*") if w.can_focus), None) if pane is not None else None
        if target is not None:
            target.focus()

    @control
    def action_stop(self) -> None:
        if self.stop_requested:
            self.action_force_stop()
            return
        self.app.push_screen(
            ConfirmScreen(
                f"Stop run {self.folder.run_id}?",
                "It finishes the current step, saves a checkpoint and ends as "
                "'stopped'. Press f (force) if it does not stop.",
            ),
            self._confirmed(force=False),
        )

    @control
    def action_rollback(self) -> None:
        offer_rollback(self, self.watched.executor, self.watched.run, self.status, replace=True)

    @control
    def action_force_stop(self) -> None:
        self.app.push_screen(
            ConfirmScreen(
                f"Force-stop run {self.folder.run_id}?",
                "Every process of the run gets TERM, then KILL. Progress since the last checkpoint is lost.",
            ),
            self._confirmed(force=True),
        )

    def _confirmed(self, force: bool):
        def answer(ok: bool | None) -> None:
            if ok:
                self._stop(force)

        return answer

    def _stop(self, force: bool) -> None:
        self.stop_requested = True
        self.notify("Stopping: finishing the step and saving a checkpoint…" if not force else "Force-stopping…")
        self.run_stop(force)

    @work(thread=True, exclusive=True, group="stop", exit_on_error=False)
    def run_stop(self, force: bool) -> None:
        try:
            outcome = self.watched.stop(force, by=APP)
        except ExecutorError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error", timeout=10)
            return
        verdict = judge_stop(outcome)
        self.app.call_from_thread(self.notify, verdict.message, severity=verdict.severity)
