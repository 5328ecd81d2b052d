"""Two or more runs' curves overlaid, one chart per metric, each run in its own colour, with a legend.

The charts are the monitor's braille charts with one series per run (``widgets/overlay_chart.py``): reward,
reward_std and KL, and a fourth that ``m`` pages through the other metrics the runs logged. Zoom (``+``/``-``,
``0``, the mouse wheel) and the cursor (``[``/``]``, a click, ``c`` to hide it) act on every chart at once, as
in the monitor; the legend reads each run's values under the cursor.

A worker reads each run once into a ``RunStream`` and answers every request for snapshots (a zoom, a new
width) from those streams: the streams stay in the worker's hands (one request at a time, ``exclusive``), and
the screen holds only the frozen snapshots it draws. Zoomed to the last N steps, the window is the newest N
steps of the longest run, and every run is cut at the same first step, so the curves stay aligned.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from trainer_core.contract.run.folder import RunFolder

from ..safe_text import clean_line
from ..services.catalog import run_info
from ..services.run_stream import ChartData, ChartRequest, RunStream, Series, SeriesSnapshot
from ..widgets import chart_messages
from ..widgets.chart_grid import MAIN_CHARTS, extra_keys, zoomed
from ..widgets.overlay_chart import OverlayChart, reading, series_colour

# the metrics the screen could chart before the runs are read (``m`` then pages through what they logged)
METRICS = ("reward", "reward_std", "kl", "entropy", "loss", "completions/mean_length")


@dataclass(frozen=True)
class RunLabel:
    """What the legend says of a run besides its curves (read from its folder)."""

    name: str
    detail: str


class CompareScreen(Screen):
    BINDINGS = [
        Binding("m", "next_metric", "Next metric"),
        Binding("plus,equals_sign", "zoom(1)", "Zoom", key_display="+"),
        Binding("minus", "zoom(-1)", "Zoom out", show=False),
        Binding("0", "zoom(0)", "All steps", show=False),
        Binding("left_square_bracket", "cursor(-1)", "Cursor left", show=False),
        Binding("right_square_bracket", "cursor(1)", "Cursor right", show=False),
        Binding("c", "hide_cursor", "Hide cursor", show=False),
        Binding("escape", "app.pop_screen", "Back"),
    ]
    DEFAULT_CSS = """
    CompareScreen #legend { padding: 0 1; background: $panel; width: 100%; height: auto; }
    CompareScreen #charts { grid-size: 2 2; grid-gutter: 0 1; height: 1fr; }
    """

    class Loaded(Message):
        """Each run's snapshots, in the order of the screen's paths, for request ``serial``."""

        def __init__(self, runs: tuple[ChartData, ...], keys: tuple[str, ...], labels: tuple[RunLabel, ...]):
            super().__init__()
            self.runs, self.keys, self.labels = runs, keys, labels

    def __init__(self, paths: list[Path]):
        super().__init__()
        self.paths = list(paths)
        self.runs: tuple[ChartData, ...] = ()
        self.labels: tuple[RunLabel, ...] = tuple(RunLabel(clean_line(p.name), "reading…") for p in self.paths)
        self.keys: tuple[str, ...] = ()  # every charted metric any run logged
        self.extra_index = 0
        self.window: int | None = None
        self.cursor: int | None = None
        self._serial = 0
        self._want_pending = False
        self._streams: list[RunStream] | None = None  # the worker's alone

    # -- layout -------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="legend", markup=False)
        with Grid(id="charts"):
            for key, title in MAIN_CHARTS:
                yield OverlayChart(key, title, id=f"chart-{key}")
            yield OverlayChart("loss", "loss", id="chart-extra")
        yield Footer()

    def on_mount(self) -> None:
        self._show_legend()
        self.want()

    @property
    def charts(self) -> list[OverlayChart]:
        return list(self.query(OverlayChart))

    @property
    def extra_key(self) -> str:
        extras = extra_keys(self.keys)
        return extras[self.extra_index % len(extras)] if extras else "loss"

    # -- reading the runs -------------------------------------------------------------------------------

    def want(self) -> None:
        """Ask for snapshots at the charts' widths once the layout has settled."""
        if not self._want_pending:
            self._want_pending = True
            self.call_after_refresh(self._post_want)

    def _post_want(self) -> None:
        self._want_pending = False
        self._serial += 1
        extra = self.query_one("#chart-extra", OverlayChart)
        extra.key = self.extra_key
        widths = tuple((chart.key, chart.buckets) for chart in self.charts)
        self.load(ChartRequest(self._serial, widths, self.window))

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def load(self, request: ChartRequest) -> None:
        labels = None
        if self._streams is None:
            streams = []
            for path in self.paths:
                stream = RunStream(RunFolder(path))
                stream.poll()
                streams.append(stream)
            self._streams = streams
            labels = tuple(_label(path) for path in self.paths)
        streams = self._streams
        keys = tuple(dict.fromkeys(key for stream in streams for key in stream.series))
        self.post_message(self.Loaded(tuple(_charts(streams, request)), keys, labels or self.labels))

    def on_compare_screen_loaded(self, message: Loaded) -> None:
        if self.runs and message.runs and message.runs[0].request.serial < self.runs[0].request.serial:
            return  # overtaken by a newer answer
        self.runs, self.labels = message.runs, message.labels
        had = self.extra_key
        self.keys = message.keys
        if self.extra_key != had:  # the fourth chart's metric is one the runs logged
            self.want()
        self.draw()

    # -- drawing ----------------------------------------------------------------------------------------

    def draw(self) -> None:
        for chart in self.charts:
            key = chart.key
            if chart.id == "chart-extra":
                chart.title = f"{key}  [m: next]"
                chart.border_title = Content(clean_line(chart.title))
                chart.empty_message = f"no run here logged {key}"
            chart.show([data.get(key) for data in self.runs], window=self.window, cursor=self.cursor)
        self._show_legend()

    def _show_legend(self) -> None:
        cursor = self.cursor
        parts: list = [f"comparing {len(self.paths)} runs" + (f" · at step {cursor:,}" if cursor is not None else "")]
        charts = self.charts if self.is_mounted else []
        for index, label in enumerate(self.labels):
            colour = series_colour(index)
            parts += ["\n", ("━━ ", colour), (label.name, f"bold {colour}")]
            if cursor is None or index >= len(self.runs):
                parts.append(f"  {label.detail}")
                continue
            values = []  # under the cursor, each chart's value instead of the run's status
            for chart in charts:
                value = reading(self.runs[index].get(chart.key), cursor)
                values.append(f"{chart.title.split('  ')[0]} {value if value is not None else '—'}")
            parts.append("  " + " · ".join(values))
        self.query_one("#legend", Static).update(Content.assemble(*parts))

    @property
    def legend_text(self) -> str:
        """The legend as plain text."""
        return str(self.query_one("#legend", Static).visual)

    # -- keys -------------------------------------------------------------------------------------------

    def action_next_metric(self) -> None:
        self.extra_index += 1
        self.want()

    def _lead(self) -> OverlayChart:
        return self.query_one("#chart-reward", OverlayChart)

    def action_zoom(self, direction: int) -> None:
        span = self._lead().domain() or next((c.domain() for c in self.charts if c.domain()), None)
        total = max((s.end_step or 0 for c in self.charts for s in c.drawn), default=0)
        shown = None
        if span is not None:
            first = min(s.steps[0] for c in self.charts for s in c.drawn)
            shown = min(span[1], total) - max(span[0], first) + 1
        window = zoomed(self.window, shown, total, direction)
        if window != self.window:
            self.window = window
            self.want()

    def action_cursor(self, cells: int) -> None:
        chart = self._lead() if self._lead().has_data else next((c for c in self.charts if c.has_data), None)
        if chart is None:
            return
        self.cursor = chart.step_beside(self.cursor, cells if self.cursor is not None else 0)
        self.draw()

    def action_hide_cursor(self) -> None:
        self.cursor = None
        self.draw()

    def on_chart_needs_data(self, message: chart_messages.NeedsData) -> None:
        message.stop()
        self.want()

    def on_chart_zoom(self, message: chart_messages.Zoom) -> None:
        message.stop()
        self.action_zoom(message.direction)

    def on_chart_pointed(self, message: chart_messages.Pointed) -> None:
        message.stop()
        self.cursor = message.step
        self.draw()


def _label(path: Path) -> RunLabel:
    """The run's id, and its project, status and steps, as the legend shows them (cleaned: from the folder)."""
    folder = RunFolder(path)
    try:
        info = run_info(folder)
    except Exception:  # a folder the catalog cannot read still has curves to compare
        return RunLabel(clean_line(path.name), "")
    steps = f"{info.step:,}" if info.step is not None else "0"
    total = f"/{info.total:,}" if info.total else ""
    project = f"{info.project} · " if info.project else ""
    return RunLabel(clean_line(path.name), clean_line(f"{project}{info.status} · step {steps}{total}"))


def _charts(streams: list[RunStream], request: ChartRequest) -> list[ChartData]:
    """Each run's snapshots for ``request``; zoomed, every run from the same first step: that of the newest
    ``window`` steps of the longest run."""
    if request.window is None:
        return [stream.charts(request) for stream in streams]
    last = max(
        (_last_step(series) for stream in streams for series in stream.series.values() if len(series)), default=0
    )
    first = last - request.window + 1
    out = []
    for stream in streams:
        snapshots: dict[str, SeriesSnapshot] = {}
        for key, buckets in request.widths:
            series = stream.series.get(key)
            if series is None or key in snapshots or not len(series) or _last_step(series) < first:
                continue
            own = _last_step(series) - first + 1  # this run's steps from ``first`` on
            snapshots[key] = series.snapshot(key, max(int(buckets), 1), own)
        out.append(ChartData(request, MappingProxyType(snapshots)))
    return out


def _last_step(series: Series) -> int:
    return series.steps[len(series) - 1]
