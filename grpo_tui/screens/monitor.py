"""The monitor: one run's health at a glance — header, charts, warnings, completions, log, GPUs, Stop.

Everything comes from the run folder, read by one worker thread (``follow``) that owns the run's
``RunStream``: it reads and folds, and posts ``Updated`` messages that carry frozen values only — a
``StreamView`` (last step, rates, metric keys, new warnings), the slow reads (status, samples, log) and,
when the screen asked for them, ``ChartData``. The UI thread keeps its own copies and draws from them,
so a metric key that first appears mid-run never changes a dict the UI is looping over.

The screen says what it will draw by putting a frozen ``ChartRequest`` (the keys and their widths) on a
queue the reader waits on; the reader downsamples only then, at the charts' pace, not with every post.
A finished run is read once: the reader hands the stream, which nothing changes any more, to short
``charts`` workers that answer later requests (the next metric, a resize).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from queue import Empty, SimpleQueue
from types import MappingProxyType
from typing import Mapping

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

from ..services.gpus import list_gpus
from ..services.log_follow import LogFollower
from ..services.run_health import watcher_warnings
from ..services.run_status import live_status, run_duration, run_total
from ..services.run_stream import EMPTY_CHARTS, ChartData, ChartRequest, RunStream, StreamUpdate, StreamView, read_samples
from ..widgets.completions import CompletionsTable
from ..widgets.gpu_panel import GpuPanel
from ..widgets.health_panel import CriticalBanner, HealthPanel
from ..widgets.metric_chart import MetricChart
from ..widgets.run_header import RunHeader
from .confirm import ConfirmScreen

MAIN_CHARTS = (("reward", "reward"), ("reward_std", "reward_std"), ("kl", "KL"))
MAIN_KEYS = frozenset(key for key, _ in MAIN_CHARTS)
EXTRA_METRICS = ("loss", "completions/mean_length", "entropy", "clip_ratio/region_mean", "grad_norm", "learning_rate")
POLL_SECONDS = 0.15
SLOW_SECONDS = 1.0  # status, samples, log
ALERT_SECONDS = 5.0  # stall and crash checks
CHART_SECONDS = 3.0  # charts redraw at most this often: drawing them (plotext, Rich, the terminal) is what costs CPU
HEADER_SECONDS = 0.5
LOG_TAIL_BYTES = 256 * 1024  # the Log tab shows the end of trainer.log
POST_SECONDS = 0.25
CHART_CPU_SHARE = 0.015  # and slower still when rendering alone would take more than 1.5% of a core


@dataclass(frozen=True)
class Slow:
    """What the reader re-reads once a second: state and status, watcher alerts, samples, new log text."""

    status: Status
    state: Mapping
    alerts: tuple[HealthWarning, ...]
    samples: tuple[dict, ...]
    log_text: str


def extra_keys(keys) -> list[str]:
    """The metrics the fourth chart cycles through (``m``), among those the run has logged."""
    return [k for k in EXTRA_METRICS if k in keys] + sorted(k for k in keys if k.startswith("rewards/") and k.endswith("/mean"))


def _latest(requests: SimpleQueue, current: ChartRequest | None, timeout: float = 0.0) -> ChartRequest | None:
    """The newest request on the queue (waiting up to ``timeout`` for one), else ``current``."""
    try:
        current = requests.get(timeout=timeout) if timeout else requests.get_nowait()
        while True:
            current = requests.get_nowait()
    except Empty:
        return current


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
        """From the reader: where the stream stands; ``final``: the stream, handed over once it is read to its end."""

        def __init__(self, view: StreamView, slow: Slow | None, charts: ChartData | None, final: RunStream | None):
            super().__init__()
            self.view, self.slow, self.charts, self.final = view, slow, charts, final

    class ChartsReady(Message):
        def __init__(self, charts: ChartData):
            super().__init__()
            self.charts = charts

    def __init__(self, folder: RunFolder):
        super().__init__()
        self.folder = folder
        self.config = folder.read_config()
        self.status = Status.STARTING
        # the UI's own copies of what the reader posted
        self.view = StreamView()
        self.state: Mapping = MappingProxyType({})
        self.warnings: list[HealthWarning] = []  # written by the trainer, in the events
        self.alerts: tuple[HealthWarning, ...] = ()  # the watcher's (stall, crash cause)
        self.shown_alerts: tuple[HealthWarning, ...] | None = None  # the watcher alerts the warnings tab last drew
        self.charts: ChartData = EMPTY_CHARTS  # the snapshots the charts last drew
        self.extra_keys: list[str] = []
        self.extra_index = 0
        self.stop_requested = False
        self.loaded = False  # warnings already on disk when the screen opens are listed, not popped up
        self.charts_asked_at = 0.0
        self.charts_dirty = False
        self.chart_timer = None
        self.header_drawn_at = 0.0
        self.last_sample: dict | None = None
        # to the reader: frozen requests on a queue; nothing else crosses between the threads
        self._requests: SimpleQueue[ChartRequest] = SimpleQueue()
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
        self.query_one("#gpus", GpuPanel).show(list_gpus())
        self.follow()

    # -- the reader (a worker thread) -------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="tail", exit_on_error=False)
    def follow(self) -> None:
        """Read the run folder and post what changed: at once for warnings, lifecycle events and asked-for
        charts, at most every POST_SECONDS for plain metrics (the UI draws no faster than that anyway)."""
        worker = get_current_worker()
        stream = RunStream(self.folder)
        log = LogFollower(self.folder.log_file, limit=LOG_TAIL_BYTES)
        pending = StreamUpdate()
        request: ChartRequest | None = None
        answered, built = 0, None
        posted_at = slow_at = alerts_at = float("-inf")
        alerts: tuple[HealthWarning, ...] = ()
        while not worker.is_cancelled:
            update = stream.poll()
            pending.add(update)
            now = time.monotonic()
            slow = None
            if now - slow_at >= SLOW_SECONDS:
                slow_at = now
                state = self.folder.read_state()
                status = live_status(self.folder, state)
                log_text = log.read()
                if now - alerts_at >= ALERT_SECONDS or not status.is_live:
                    alerts_at = now
                    alerts = tuple(watcher_warnings(self.folder, status, config=self.config))
                slow = Slow(status, MappingProxyType(state), alerts, tuple(read_samples(self.folder)), log_text)
            done = slow is not None and not slow.status.is_live and not update
            request = _latest(self._requests, request)
            charts = None
            if request is not None and (request.serial > answered or done) and (request.serial, stream.metrics_read) != built:
                charts, answered, built = stream.charts(request), request.serial, (request.serial, stream.metrics_read)
            if slow or charts or done or pending.warnings or pending.lifecycle or (
                    pending and now - posted_at >= POST_SECONDS):
                self.post_message(self.Updated(stream.view(pending), slow, charts, stream if done else None))
                pending, posted_at = StreamUpdate(), now
            if done:
                return
            request = _latest(self._requests, request, timeout=POLL_SECONDS)

    @work(thread=True, exclusive=True, group="charts", exit_on_error=False)
    def answer_charts(self, stream: RunStream, request: ChartRequest) -> None:
        """Charts from a stream read to its end (the reader has stopped; nothing changes it any more)."""
        charts = stream.charts(request)
        if not get_current_worker().is_cancelled:
            self.post_message(self.ChartsReady(charts))

    # -- the UI thread ----------------------------------------------------------------------------------

    def on_monitor_screen_updated(self, message: Updated) -> None:
        slow, view = message.slow, message.view
        if slow:
            self.status, self.state, self.alerts = slow.status, slow.state, slow.alerts
            if slow.samples and slow.samples[-1] != self.last_sample:
                self.last_sample = slow.samples[-1]
                self.query_one("#samples", CompletionsTable).set_samples(list(slow.samples))
            if slow.log_text:
                self.query_one("#log-view", Log).write(slow.log_text)
        new_steps = view.metrics_read != self.view.metrics_read
        if view.keys != self.view.keys:
            self.extra_keys = extra_keys(view.keys)
        self.view = view
        self.warnings.extend(view.warnings)
        if view.warnings or (slow and slow.alerts != self.shown_alerts):
            if slow:
                self.shown_alerts = slow.alerts
            self._show_warnings(view.warnings)
        if message.charts is not None:
            self._draw_charts(message.charts)
        if new_steps or view.warnings:
            self._request_charts()
        if new_steps or slow:
            if slow or time.monotonic() - self.header_drawn_at >= HEADER_SECONDS:
                self._refresh_header()
        if message.final is not None:
            self._final = message.final
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
        from ..services.supervisor import stop_run

        report = stop_run(self.folder, force=force, timeout=300)
        self.app.call_from_thread(self.notify, report.describe(), severity="error" if report.left else "information")
