"""The monitor: one run's health at a glance — header, charts, warnings, completions, log, GPUs, Stop.

One worker thread (``follow``) owns the run's ``RunStream``: it reads and folds, and posts ``Updated``
messages carrying frozen values only (``StreamView``, the slow reads, ``ChartData`` when asked for). The UI
keeps its own copies and draws from them, so a metric that first appears mid-run never changes a dict the
UI is looping over. The UI asks for charts with a frozen ``ChartRequest`` on a queue the reader waits on:
downsampling runs at the charts' pace, not with every post. A finished run is read once; the reader then
hands over the stream, which nothing changes any more, to short ``charts`` workers for later requests.
"""

from __future__ import annotations

import time
from queue import SimpleQueue
from types import MappingProxyType

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Log, TabbedContent, TabPane
from textual.worker import get_current_worker

from trainer_core.contract.events import HealthWarning
from trainer_core.contract.run_folder import RunFolder
from trainer_core.contract.severity import Severity
from trainer_core.contract.status import Status

from ..executors.remote_run import RemoteRun
from ..services import run_reader
from ..services.gpus import list_gpus
from ..services.run_reader import Post
from ..services.run_status import run_duration, run_total
from ..services.run_stream import EMPTY_CHARTS, ChartData, ChartRequest, RunStream, StreamView
from ..widgets.completions import CompletionsTable
from ..widgets.gpu_panel import GpuPanel
from ..widgets.health_panel import CriticalBanner, HealthPanel
from ..widgets.metric_chart import MetricChart
from ..widgets.run_header import RunHeader
from .confirm import ConfirmScreen

MAIN_CHARTS = (("reward", "reward"), ("reward_std", "reward_std"), ("kl", "KL"))
MAIN_KEYS = frozenset(key for key, _ in MAIN_CHARTS)
EXTRA_METRICS = ("loss", "completions/mean_length", "entropy", "clip_ratio/region_mean", "grad_norm", "learning_rate")
CHART_SECONDS = 3.0  # charts redraw at most this often: drawing them (plotext, Rich, the terminal) is what costs CPU
HEADER_SECONDS = 0.5
CHART_CPU_SHARE = 0.015  # and slower still when rendering alone would take more than 1.5% of a core


def extra_keys(keys) -> list[str]:
    """The metrics the fourth chart cycles through (``m``), among those the run has logged."""
    return [k for k in EXTRA_METRICS if k in keys] + sorted(k for k in keys if k.startswith("rewards/") and k.endswith("/mean"))


class MonitorScreen(Screen):
    BINDINGS = [
        Binding("s", "stop", "Stop"),
        Binding("f", "force_stop", "Force stop"),
        Binding("m", "next_metric", "Next metric"),
        Binding("1", "tab('charts')", "Charts", show=False),
        Binding("2", "tab('warnings')", "Warnings", show=False),
        Binding("3", "tab('completions')", "Completions", show=False),
        Binding("4", "tab('log')", "Log", show=False),
        Binding("5", "tab('gpu')", "GPU", show=False),
        Binding("escape", "app.pop_screen", "Back"),
    ]
    DEFAULT_CSS = """
    MonitorScreen { overflow: hidden; }
    MonitorScreen TabbedContent, MonitorScreen ContentSwitcher, MonitorScreen TabPane { height: 1fr; }
    MonitorScreen Grid { grid-size: 2 2; grid-gutter: 0 1; }
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

    def __init__(self, folder: RunFolder, remote: RemoteRun | None = None):
        super().__init__()
        self.folder = folder
        self.remote = remote  # a run on another host: ``folder`` is its local copy, kept current by remote.mirror
        self.gpus_shown = None
        self.config = folder.read_config()
        self.status = Status.STARTING
        # the UI's own copies of what the reader posted
        self.view, self.state = StreamView(), MappingProxyType({})
        self.warnings: list[HealthWarning] = []  # the trainer's, from the events
        self.alerts: tuple[HealthWarning, ...] = ()  # the watcher's (stall, crash cause)
        self.shown_alerts = None  # the watcher alerts the warnings tab last drew
        self.charts: ChartData = EMPTY_CHARTS  # what the charts last drew
        self.extra_keys: list[str] = []
        self.extra_index = 0
        self.stop_requested = False
        self.loaded = False  # warnings already on disk when the screen opens are listed, not popped up
        self.charts_asked_at = 0.0
        self.charts_dirty = False
        self.chart_timer = None
        self.header_drawn_at = 0.0
        self.last_sample: dict | None = None
        self._requests: SimpleQueue[ChartRequest] = SimpleQueue()  # to the reader
        self._asked: ChartRequest | None = None
        self._final: RunStream | None = None
        self._refit_pending = False

    @property
    def kl_measured(self) -> bool:
        return self.config.get("rl_kl_coef", 0.1) != 0

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield CriticalBanner(id="banner")
        with TabbedContent(initial="charts"):
            with TabPane("Charts", id="charts"):
                with Grid():
                    for key, title in MAIN_CHARTS:
                        message = None if key != "kl" or self.kl_measured else "KL not measured: rl_kl_coef = 0 (the KL penalty is off)."
                        yield MetricChart(key, title, empty_message=message, id=f"chart-{key}")
                    yield MetricChart("loss", "loss", id="chart-extra")
            with TabPane("Warnings", id="warnings"):
                yield HealthPanel(id="health")
            with TabPane("Completions", id="completions"):
                yield CompletionsTable(id="samples")
            with TabPane("Log", id="log"):
                yield Log(id="log-view", max_lines=5000)
            with TabPane("GPU", id="gpu"):
                yield GpuPanel(id="gpus")
        yield Footer()

    def on_mount(self) -> None:
        if self.remote is None:
            self.query_one("#gpus", GpuPanel).show(list_gpus())
        else:
            self.sub_title = f"on {self.remote.host}"
            self._show_remote_gpus()
        self.follow()

    def on_unmount(self) -> None:
        if self.remote is not None:
            self.remote.mirror.stop()

    def _show_remote_gpus(self) -> None:
        gpus = self.remote.gpus()
        if gpus != self.gpus_shown:
            self.gpus_shown = gpus
            self.query_one("#gpus", GpuPanel).show(gpus, where=f"host {self.remote.host}")

    # -- the reader (a worker thread) -------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="tail", exit_on_error=False)
    def follow(self) -> None:
        worker = get_current_worker()
        run_reader.follow(self.folder, self.config, self._requests, lambda post: self.post_message(self.Updated(post)),
                          lambda: worker.is_cancelled)

    @work(thread=True, exclusive=True, group="charts", exit_on_error=False)
    def answer_charts(self, stream: RunStream, request: ChartRequest) -> None:
        """Charts from a stream read to its end (the reader has stopped; nothing changes it any more)."""
        charts = stream.charts(request)
        if not get_current_worker().is_cancelled:
            self.post_message(self.ChartsReady(charts))

    # -- the UI thread ----------------------------------------------------------------------------------

    def on_monitor_screen_updated(self, message: Updated) -> None:
        post = message.post
        slow, view = post.slow, post.view
        if slow:
            self.status, self.state, self.alerts = slow.status, slow.state, slow.alerts
            if slow.samples and slow.samples[-1] != self.last_sample:
                self.last_sample = slow.samples[-1]
                self.query_one("#samples", CompletionsTable).set_samples(list(slow.samples))
            if slow.log_text:
                self.query_one("#log-view", Log).write(slow.log_text)
            if self.remote is not None:
                self._show_remote_gpus()
        new_steps = view.metrics_read != self.view.metrics_read
        if view.keys != self.view.keys:
            self.extra_keys = extra_keys(view.keys)
        self.view = view
        self.warnings.extend(view.warnings)
        if view.warnings or (slow and slow.alerts != self.shown_alerts):
            if slow:
                self.shown_alerts = slow.alerts
            self._show_warnings(view.warnings)
        if post.charts is not None:
            self._draw_charts(post.charts)
        if new_steps or view.warnings:
            self._request_charts()
        if new_steps or slow:
            if slow or time.monotonic() - self.header_drawn_at >= HEADER_SECONDS:
                self._refresh_header()
        if post.final is not None:
            self._final = post.final
            if self._asked is not None and self._asked.serial > self.charts.request.serial:
                self._ask_charts()  # asked for after the reader's last look at its queue
        self.loaded = True

    def on_monitor_screen_charts_ready(self, message: ChartsReady) -> None:
        self._draw_charts(message.charts)

    def on_metric_chart_needs_data(self, message: MetricChart.NeedsData) -> None:
        message.stop()
        if not self._refit_pending:  # the four charts resize together: ask once
            self._refit_pending = True
            self.call_after_refresh(self._refit)

    def _refit(self) -> None:
        self._refit_pending = False
        if self.query_one(TabbedContent).active == "charts":
            self._ask_charts()
        else:
            self.charts_dirty = True

    def _request_charts(self) -> None:
        """Ask for charts now if they are on screen and were not asked for in the last CHART_SECONDS; else later."""
        self.charts_dirty = True
        if self.query_one(TabbedContent).active != "charts":
            return
        cost = sum(chart.render_seconds for chart in self.query(MetricChart))
        interval = min(max(CHART_SECONDS, cost / CHART_CPU_SHARE), 10.0)
        wait = self.charts_asked_at + interval - time.monotonic()
        if wait <= 0:
            self._ask_charts()
        elif self.chart_timer is None:
            self.chart_timer = self.set_timer(wait, self._deferred_charts)

    def _deferred_charts(self) -> None:
        self.chart_timer = None
        if self.charts_dirty:
            self._request_charts()

    def _ask_charts(self) -> None:
        """Tell the reader which series to snapshot, at the charts' current widths."""
        self.charts_asked_at = time.monotonic()
        self.charts_dirty = False
        widths = [(key, self.query_one(f"#chart-{key}", MetricChart).buckets) for key, _ in MAIN_CHARTS]
        extra = self._extra_key()
        if extra is not None:
            widths.append((extra, self.query_one("#chart-extra", MetricChart).buckets))
        request = self._asked = ChartRequest((self._asked.serial if self._asked else 0) + 1, tuple(widths))
        if self._final is None:
            self._requests.put(request)
        else:
            self.answer_charts(self._final, request)

    def _extra_key(self) -> str | None:
        return self.extra_keys[self.extra_index % len(self.extra_keys)] if self.extra_keys else None

    def _draw_charts(self, data: ChartData) -> None:
        if data.request.serial < self.charts.request.serial:  # overtaken by a newer answer
            return
        self.charts = data
        markers = self._markers()
        for key, _ in MAIN_CHARTS:
            self.query_one(f"#chart-{key}", MetricChart).show(data.get(key), markers)
        extra = next((key for key, _ in data.request.widths if key not in MAIN_KEYS), None)
        if extra is not None:
            chart = self.query_one("#chart-extra", MetricChart)
            chart.title = f"{extra}  [m: next]"
            chart.show(data.get(extra), markers)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "charts" and self.charts_dirty:
            self._ask_charts()

    def _all_warnings(self) -> list[HealthWarning]:
        return [*self.warnings, *self.alerts]

    def _show_warnings(self, new: tuple[HealthWarning, ...]) -> None:
        warnings = self._all_warnings()
        self.query_one("#health", HealthPanel).set_warnings(warnings)
        critical = [w for w in warnings if w.severity is Severity.CRITICAL]
        self.query_one("#banner", CriticalBanner).show(critical[-1] if critical else None)
        for w in new if self.loaded else ():
            if w.severity.alarming:
                self.notify(f"{w.rule}: {w.message}", title=f"step {w.step}",
                            severity="error" if w.severity is Severity.CRITICAL else "warning", timeout=8)

    def _markers(self) -> list[int]:
        return [w.step for w in self.warnings if w.severity.alarming]

    def _refresh_header(self) -> None:
        self.header_drawn_at = time.monotonic()
        view, state = self.view, self.state
        last_time = view.last.time if view.last is not None else None
        self.query_one("#header", RunHeader).show(
            self.folder.run_id, self.config.get("model"), self.status, view.step, run_total(state, self.config),
            run_duration(state, self.status, last_event_time=last_time), view.steps_per_s, view.tokens_per_s,
        )

    def action_next_metric(self) -> None:
        self.extra_index += 1
        self._ask_charts()

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_stop(self) -> None:
        if self.stop_requested:
            self.action_force_stop()
            return
        self.app.push_screen(
            ConfirmScreen(f"Stop run {self.folder.run_id}?", "It finishes the current step, saves a checkpoint and ends as "
                          "'stopped'. Press f (force) if it does not stop."),
            lambda ok: ok and self._stop(force=False),
        )

    def action_force_stop(self) -> None:
        self.app.push_screen(
            ConfirmScreen(f"Force-stop run {self.folder.run_id}?", "Every process of the run gets TERM, then KILL. "
                          "Progress since the last checkpoint is lost."),
            lambda ok: ok and self._stop(force=True),
        )

    def _stop(self, force: bool) -> None:
        self.stop_requested = True
        self.notify("Stopping: finishing the step and saving a checkpoint…" if not force else "Force-stopping…")
        self.run_stop(force)

    @work(thread=True, exclusive=True, group="stop", exit_on_error=False)
    def run_stop(self, force: bool) -> None:
        if self.remote is not None:
            from ..executors.hosts import HostError

            try:
                outcome = self.remote.stop(force)
            except HostError as exc:
                self.app.call_from_thread(self.notify, str(exc), severity="error", timeout=10)
                return
            self.app.call_from_thread(self.notify, outcome["message"], severity="error" if outcome["left"] else "information")
            return
        from ..services.supervisor import stop_run

        report = stop_run(self.folder, force=force, timeout=300)
        self.app.call_from_thread(self.notify, report.describe(), severity="error" if report.left else "information")
