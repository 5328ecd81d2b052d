"""Two or more runs' curves overlaid, one chart per metric, each run in its own colour, with a legend.

The charts are the monitor's braille charts with one series per run (``widgets/overlay_chart.py``): reward,
reward_std and KL, and a fourth that ``m`` pages through the other metrics the runs logged. Zoom (``+``/``-``,
``0``, the mouse wheel) and the cursor (``[``/``]``, a click, ``c`` to hide it) act on every chart at once: they
are the monitor's grid's controls (``ChartControls``); the legend reads each run's values under the cursor.
``v`` (held-out, as on the monitor) turns the fourth chart to the held-out evaluation: each run's eval series of one held-out metric (its
mean at each eval, the baseline at step 0 included), and ``m`` then pages through the held-out metrics the
runs measured; ``v`` again goes back to training metrics.

A worker reads each run once into a ``RunStream`` and answers every request for snapshots (a zoom, a new
width) from those streams: the streams stay in the worker's hands (one request at a time, ``exclusive``), and
the screen holds only the frozen snapshots it draws. The legend names each run (its id, name and tags), and under
it the settings that differ between the runs' config.yaml files (``services/catalog/config_diff.py``), literally. Zoomed to the last N steps, the window is the newest N
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

from grpo_tui.services.catalog.config_diff import differing
from grpo_tui.services.catalog.folders import held_out_evals, run_info
from grpo_tui.services.stream.folded import ChartData, ChartRequest, RunStream, Series, SeriesSnapshot
from trainer_core.contract.run.events import Eval
from trainer_core.contract.run.folder import RunFolder

from ..safe_text import clean_line
from ..widgets.chart_grid import MAIN_CHARTS, ChartControls, extra_keys
from ..widgets.overlay_chart import OverlayChart, reading, series_colour
from ..widgets.runs_table import run_label

# the metrics the screen could chart before the runs are read (``m`` then pages through what they logged)
METRICS = ("reward", "reward_std", "kl", "entropy", "loss", "completions/mean_length")
HELD_OUT = "held-out "  # the key of a held-out metric's chart: "held-out " and the metric's name
MAX_SETTINGS = 8  # differing settings listed; the rest are counted


@dataclass(frozen=True)
class RunLabel:
    """What the legend says of a run besides its curves (read from its folder)."""

    name: str
    detail: str


class CompareScreen(ChartControls, Screen):
    BINDINGS = [
        Binding("m", "next_metric", "Next metric"),
        Binding("v", "held_out", "Held-out", tooltip="The held-out evals' series on the fourth chart, or back"),
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
    CompareScreen #settings { padding: 0 1; background: $panel; width: 100%; height: auto; max-height: 10; }
    CompareScreen #charts { grid-size: 2 2; grid-gutter: 0 1; height: 1fr; }
    """

    class Loaded(Message):
        """Each run's snapshots, in the order of the screen's paths, for request ``serial``; ``held_out``: the
        held-out metrics any run measured (chart keys)."""

        def __init__(
            self,
            runs: tuple[ChartData, ...],
            keys: tuple[str, ...],
            labels: tuple[RunLabel, ...],
            held_out: tuple[str, ...] = (),
            settings: tuple[tuple[str, tuple[str, ...]], ...] | None = None,
        ):
            super().__init__()
            self.runs, self.keys, self.labels, self.held_out = runs, keys, labels, held_out
            self.settings = settings

    def __init__(self, paths: list[Path]):
        super().__init__()
        self.paths = list(paths)
        self.runs: tuple[ChartData, ...] = ()
        self.labels: tuple[RunLabel, ...] = tuple(RunLabel(clean_line(p.name), "reading…") for p in self.paths)
        self.keys: tuple[str, ...] = ()  # every charted metric any run logged
        self.extra_index = 0
        self.held_out_keys: tuple[str, ...] = ()  # a chart key per held-out metric any run measured
        self.showing_held_out = False  # the fourth chart shows a held-out metric
        self._serial = 0
        self._streams: list[RunStream] | None = None  # the worker's alone
        self._evals: list[dict[int, Eval]] = []  # each run's evals by step, the worker's alone
        self.settings: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (key, each run's value) that differ

    # -- layout -------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="legend", markup=False)
        yield Static(id="settings", markup=False)
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
        if self.showing_held_out:
            names = self.held_out_keys
            return names[self.extra_index % len(names)] if names else HELD_OUT
        extras = extra_keys(self.keys)
        return extras[self.extra_index % len(extras)] if extras else "loss"

    # -- reading the runs -------------------------------------------------------------------------------

    def _request(self) -> None:
        """Ask for snapshots at the charts' widths (``want`` calls this once the layout has settled)."""
        self._serial += 1
        extra = self.query_one("#chart-extra", OverlayChart)
        extra.key = self.extra_key
        widths = tuple((chart.key, chart.buckets) for chart in self.charts)
        self.load(ChartRequest(self._serial, widths, self.window))

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def load(self, request: ChartRequest) -> None:
        labels = settings = None
        if self._streams is None:
            streams = []
            for path in self.paths:
                stream = RunStream(RunFolder(path))
                stream.poll()
                streams.append(stream)
            self._streams = streams
            self._evals = [held_out_evals(RunFolder(path).events_file) for path in self.paths]
            labels = tuple(_label(path) for path in self.paths)
            settings = tuple(differing([RunFolder(path).read_config() for path in self.paths]))
        streams = self._streams
        keys = tuple(dict.fromkeys(key for stream in streams for key in stream.series))
        held_out = tuple(
            dict.fromkeys(HELD_OUT + name for evals in self._evals if evals for name in evals[max(evals)].headline())
        )
        runs = tuple(_charts(streams, request, self._evals))
        self.post_message(self.Loaded(runs, keys, labels or self.labels, held_out, settings))

    def on_compare_screen_loaded(self, message: Loaded) -> None:
        if self.runs and message.runs and message.runs[0].request.serial < self.runs[0].request.serial:
            return  # overtaken by a newer answer
        self.runs, self.labels = message.runs, message.labels
        if message.settings is not None:
            self.settings = message.settings
            self._show_settings()
        had = self.extra_key
        self.keys, self.held_out_keys = message.keys, message.held_out
        if self.extra_key != had:  # the fourth chart's metric is one the runs logged
            self.want()
        self.draw()

    # -- drawing ----------------------------------------------------------------------------------------

    def draw(self) -> None:
        for chart in self.charts:
            key = chart.key
            if chart.id == "chart-extra":
                chart.title = f"{key}  [m: next · v: {'training' if self.showing_held_out else 'held-out'}]"
                chart.empty_message = (
                    "no run here has a held-out set" if key == HELD_OUT else f"no run here logged {key}"
                )
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

    def _show_settings(self) -> None:
        """The settings that differ, one line each: the key, then each run's value in its colour."""
        if not self.settings:
            text = Content("same settings in every run's config.yaml" if len(self.paths) > 1 else "")
        else:
            parts: list = ["settings that differ:"]
            for key, values in self.settings[:MAX_SETTINGS]:
                parts += ["\n", (f"  {clean_line(key)}", "bold")]
                for index, value in enumerate(values):
                    parts += ["  " if index == 0 else " · ", (clean_line(value), series_colour(index))]
            more = len(self.settings) - MAX_SETTINGS
            if more > 0:
                parts.append(f"\n  … and {more} more")
            text = Content.assemble(*parts)
        self.query_one("#settings", Static).update(text)

    @property
    def settings_text(self) -> str:
        """The settings that differ, as plain text."""
        return str(self.query_one("#settings", Static).visual)

    @property
    def legend_text(self) -> str:
        """The legend as plain text."""
        return str(self.query_one("#legend", Static).visual)

    # -- keys -------------------------------------------------------------------------------------------

    def action_next_metric(self) -> None:
        self.extra_index += 1
        self.want()

    def action_held_out(self) -> None:
        """The fourth chart: the held-out metrics' eval series, or back to the training metrics."""
        self.showing_held_out, self.extra_index = not self.showing_held_out, 0
        self.want()

    # zoom and the cursor: the monitor's grid's controls (``ChartControls``), on these keys
    action_zoom = ChartControls.zoom
    action_cursor = ChartControls.move_cursor
    action_hide_cursor = ChartControls.hide_cursor

    def _extent(self) -> tuple[int | None, int]:
        """The steps zoom is measured on: those the reward chart spans (or the first chart with data), less
        what lies outside every run's steps; and the newest step of any run."""
        charts = self.charts
        span = next((span for chart in charts if (span := chart.domain()) is not None), None)
        total = max((s.end_step or 0 for c in charts for s in c.drawn), default=0)
        if span is None:
            return None, total
        first = min(s.steps[0] for c in charts for s in c.drawn)
        return min(span[1], total) - max(span[0], first) + 1, total


def _label(path: Path) -> RunLabel:
    """The run's id, name and tags, and its project, status and steps, as the legend shows them (cleaned: from the
    folder)."""
    folder = RunFolder(path)
    try:
        info = run_info(folder)
    except Exception:  # a folder the catalog cannot read still has curves to compare
        return RunLabel(clean_line(path.name), "")
    steps = f"{info.step:,}" if info.step is not None else "0"
    total = f"/{info.total:,}" if info.total else ""
    project = f"{info.project} · " if info.project else ""
    label = run_label(info)
    name = f"{path.name}  {label}" if label else path.name
    return RunLabel(clean_line(name), clean_line(f"{project}{info.status} · step {steps}{total}"))


def _charts(streams: list[RunStream], request: ChartRequest, evals: list[dict[int, Eval]]) -> list[ChartData]:
    """Each run's snapshots for ``request``, its held-out charts from its ``evals``; zoomed, every run from the
    same first step: that of the newest ``window`` steps of the longest run."""
    charts = _training_charts(streams, request)
    held_out = [(key, buckets) for key, buckets in request.widths if key.startswith(HELD_OUT)]
    if not held_out:
        return charts
    first = 0  # all steps: the baseline (step 0) too; zoomed: from the training charts' first step
    if request.window is not None:
        first = min((s.steps[0] for data in charts for s in data.series.values() if s.steps), default=0)
    out = []
    for data, run_evals in zip(charts, evals):
        extra = {key: _eval_snapshot(key, run_evals, buckets, first, request.window) for key, buckets in held_out}
        series = {**data.series, **{key: snap for key, snap in extra.items() if snap is not None}}
        out.append(ChartData(request, MappingProxyType(series)))
    return out


def _eval_snapshot(
    key: str, evals: dict[int, Eval], buckets: int, first: int, window: int | None
) -> SeriesSnapshot | None:
    """A held-out metric's mean at each eval from step ``first`` on, one point per eval (None: no eval has it)."""
    name = key[len(HELD_OUT) :]
    points = [
        (step, value) for step, e in sorted(evals.items()) if step >= first and (value := e.value(name)) is not None
    ]
    if not points:
        return None
    steps, values = tuple(p[0] for p in points), tuple(p[1] for p in points)
    return SeriesSnapshot(key, len(points), buckets, steps, values, values, values[-1], values, 1, steps[-1], window)


def _training_charts(streams: list[RunStream], request: ChartRequest) -> list[ChartData]:
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
