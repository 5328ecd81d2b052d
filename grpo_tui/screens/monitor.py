"""The monitor: one run's health at a glance — header, charts, warnings, completions, log, GPUs, Stop.

Everything comes from the run folder, read in a worker thread that posts one message per poll; the UI
thread only draws. A finished run opens with its full history, a live one keeps updating.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Log, TabbedContent, TabPane
from textual.worker import get_current_worker

from trainer_core.contract.run_folder import RunFolder

from ..services.gpus import list_gpus
from ..services.registry import is_live, live_status, read_config, run_duration, run_total
from ..services.run_health import watcher_warnings
from ..services.log_follow import LogFollower
from ..services.run_stream import RunStream, StreamUpdate, read_samples
from ..widgets.completions import CompletionsTable
from ..widgets.gpu_panel import GpuPanel
from ..widgets.health_panel import CriticalBanner, HealthPanel
from ..widgets.metric_chart import MetricChart
from ..widgets.run_header import RunHeader
from .confirm import ConfirmScreen

MAIN_CHARTS = (("reward", "reward"), ("reward_std", "reward_std"), ("kl", "KL"))
EXTRA_METRICS = ("loss", "completions/mean_length", "entropy", "clip_ratio/region_mean", "grad_norm", "learning_rate")
POLL_SECONDS = 0.15
SLOW_EVERY = 7  # about once a second: status, samples, log
ALERT_EVERY = 5  # stall and crash checks every few seconds
CHART_SECONDS = 3.0  # charts redraw at most this often: drawing them (plotext, Rich, the terminal) is what costs CPU
HEADER_SECONDS = 0.5
LOG_TAIL_BYTES = 256 * 1024  # the Log tab shows the end of trainer.log
POST_SECONDS = 0.25
CHART_CPU_SHARE = 0.015  # and slower still when rendering alone would take more than 1.5% of a core


@dataclass
class Slow:
    """What the worker re-reads once a second: status, watcher alerts, samples, new log text."""

    status: str
    alerts: list[dict]
    samples: list[dict]
    log_text: str


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
        def __init__(self, update: StreamUpdate, slow: Slow | None):
            super().__init__()
            self.update = update
            self.slow = slow

    def __init__(self, folder: RunFolder):
        super().__init__()
        self.folder = folder
        self.stream = RunStream(folder)
        self.config = read_config(folder)
        self.status = "starting"
        self.alerts: list[dict] = []
        self.shown_alerts: list[dict] | None = None  # the watcher alerts the warnings tab last drew
        self.extra_keys: list[str] = []
        self.extra_index = 0
        self.stop_requested = False
        self.loaded = False  # warnings already on disk when the screen opens are listed, not popped up
        self.charts_drawn_at = 0.0
        self.charts_dirty = False
        self.chart_timer = None
        self.header_drawn_at = 0.0
        self.last_sample: dict | None = None

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

    @work(thread=True, exclusive=True, group="tail", exit_on_error=False)
    def follow(self) -> None:
        """Read the run folder and post what changed: at once for warnings and lifecycle events, at most
        every POST_SECONDS for plain metrics (the UI draws no faster than that anyway)."""
        worker = get_current_worker()
        log = LogFollower(self.folder.log_file, limit=LOG_TAIL_BYTES)
        tick = 0
        pending = StreamUpdate()
        posted_at = 0.0
        alerts: list[dict] = []
        while not worker.is_cancelled:
            update = self.stream.poll()
            pending.steps += update.steps
            pending.warnings += update.warnings
            pending.lifecycle += update.lifecycle
            slow = None
            if tick % SLOW_EVERY == 0:
                status = live_status(self.folder)
                log_text = log.read()
                if tick % (SLOW_EVERY * ALERT_EVERY) == 0 or not is_live(status):
                    alerts = [w.to_event() for w in watcher_warnings(self.folder, status)]
                slow = Slow(status, alerts, read_samples(self.folder), log_text)
            urgent = slow or pending.warnings or pending.lifecycle
            if (pending and (urgent or time.monotonic() - posted_at >= POST_SECONDS)) or slow:
                self.post_message(self.Updated(pending, slow))
                pending, posted_at = StreamUpdate(), time.monotonic()
            if slow and not is_live(slow.status) and not update:
                return
            tick += 1
            time.sleep(POLL_SECONDS)

    def on_monitor_screen_updated(self, message: Updated) -> None:
        slow = message.slow
        if slow:
            self.status = slow.status
            self.alerts = slow.alerts
            if slow.samples and slow.samples[-1] != self.last_sample:
                self.last_sample = slow.samples[-1]
                self.query_one("#samples", CompletionsTable).set_samples(slow.samples)
            if slow.log_text:
                self.query_one("#log-view", Log).write(slow.log_text)
        update = message.update
        if update.warnings or (slow and slow.alerts != self.shown_alerts):
            if slow:
                self.shown_alerts = slow.alerts
            self._show_warnings(update.warnings)
        if update.steps or slow:
            self._request_charts()
            if slow or time.monotonic() - self.header_drawn_at >= HEADER_SECONDS:
                self._refresh_header()
        self.loaded = True

    def _request_charts(self) -> None:
        """Redraw the charts now if they are on screen and were not drawn in the last CHART_SECONDS; else later."""
        self.charts_dirty = True
        if self.query_one(TabbedContent).active != "charts":
            return
        cost = sum(chart.render_seconds for chart in self.query(MetricChart))
        interval = min(max(CHART_SECONDS, cost / CHART_CPU_SHARE), 10.0)
        wait = self.charts_drawn_at + interval - time.monotonic()
        if wait <= 0:
            self._refresh_charts()
        elif self.chart_timer is None:
            self.chart_timer = self.set_timer(wait, self._deferred_charts)

    def _deferred_charts(self) -> None:
        self.chart_timer = None
        if self.charts_dirty:
            self._request_charts()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "charts" and self.charts_dirty:
            self._refresh_charts()

    def _all_warnings(self) -> list[dict]:
        return [*self.stream.warnings, *self.alerts]

    def _show_warnings(self, new: list[dict]) -> None:
        warnings = self._all_warnings()
        self.query_one("#health", HealthPanel).set_warnings(warnings)
        critical = [w for w in warnings if w.get("severity") == "critical"]
        self.query_one("#banner", CriticalBanner).show(critical[-1] if critical else None)
        for w in new if self.loaded else []:
            if w.get("severity") in ("warn", "critical"):
                self.notify(f"{w.get('rule')}: {w.get('message')}", title=f"step {w.get('step')}",
                            severity="error" if w.get("severity") == "critical" else "warning", timeout=8)

    def _markers(self) -> list[int]:
        return [w.get("step", 0) for w in self.stream.warnings if w.get("severity") in ("warn", "critical")]

    def _refresh_charts(self) -> None:
        self.charts_drawn_at = time.monotonic()
        self.charts_dirty = False
        markers = self._markers()
        for key, _ in MAIN_CHARTS:
            self.query_one(f"#chart-{key}", MetricChart).show(self.stream.series.get(key), markers)
        self.extra_keys = [k for k in EXTRA_METRICS if k in self.stream.series] + sorted(
            k for k in self.stream.series if k.startswith("rewards/") and k.endswith("/mean"))
        if self.extra_keys:
            key = self.extra_keys[self.extra_index % len(self.extra_keys)]
            chart = self.query_one("#chart-extra", MetricChart)
            chart.title = f"{key}  [m: next]"
            chart.show(self.stream.series.get(key), markers)

    def _refresh_header(self) -> None:
        self.header_drawn_at = time.monotonic()
        last = self.stream.last_metrics
        state = self.folder.read_state()
        self.query_one("#header", RunHeader).show(
            self.folder.run_id, self.config.get("model"), self.status, last.get("step"), run_total(state, self.config),
            run_duration(state, self.status, last_event=last), self.stream.rate(), self.stream.tokens_rate(),
        )

    def action_next_metric(self) -> None:
        self.extra_index += 1
        self._refresh_charts()

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

