"""A live chart of one metric, drawn from a frozen snapshot already downsampled to the widget's width.

Each horizontal bucket of the snapshot holds its minimum and maximum (not a mean), and both are drawn: a
spike in a million-step run still shows as a spike (``services/run_stream.py`` builds them, in the
screen's reader thread). The chart only draws what it is given; when its width changes so that the
snapshot no longer fits it, it posts ``NeedsData`` and its screen asks the reader for a new one.
Drawing is delegated to textual-plotext; the warning markers take the theme's error colour.
"""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.color import Color, ColorParseError
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Label
from textual_plotext import PlotextPlot

from trainer_core.contract.severity import Severity

from ..palette import app_palette
from ..services.run_stream import SeriesSnapshot

MARGIN = 8  # the plot's axis labels and the border take about this many columns


class TimedPlot(PlotextPlot):
    """A PlotextPlot that remembers how long its last render took, so callers can pace redraws."""

    render_seconds = 0.0

    def render(self):
        started = time.perf_counter()
        try:
            return super().render()
        finally:
            self.render_seconds = time.perf_counter() - started


class MetricChart(Vertical):
    """Title, chart, and a plain-words line when there is nothing to draw (e.g. KL not measured)."""

    DEFAULT_CSS = """
    MetricChart { height: 1fr; min-height: 6; border: round $primary-darken-2; }
    MetricChart > Label { color: $text-muted; padding: 0 1; }
    MetricChart > PlotextPlot { height: 1fr; }
    """

    class NeedsData(Message):
        """The chart's width no longer matches its snapshot's buckets: it wants one built for ``buckets``."""

        def __init__(self, chart: MetricChart, buckets: int):
            super().__init__()
            self.chart = chart
            self.buckets = buckets

    def __init__(self, key: str, title: str | None = None, *, empty_message: str | None = None, id: str | None = None):
        super().__init__(id=id)
        self.key = key
        self.title = title or key
        self.empty_message = empty_message or "no data yet"
        self.border_title = self._drawn_title = self.title
        self._series: SeriesSnapshot | None = None
        self._markers: tuple[int, ...] = ()

    def compose(self) -> ComposeResult:
        yield Label(self.empty_message, id="empty")
        yield TimedPlot()

    def on_mount(self) -> None:
        self.query_one(PlotextPlot).display = False
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh_plot())

    @property
    def buckets(self) -> int:
        """How many points fit across the plot at its current width."""
        return max(self.size.width - MARGIN, 10)

    def show(self, series: SeriesSnapshot | None, markers=()) -> None:
        self._series = series
        self._markers = tuple(markers)
        self.refresh_plot()
        self._check_fit()

    def on_resize(self) -> None:
        self.refresh_plot()
        self._check_fit()

    def _check_fit(self) -> None:
        series = self._series
        if series is None or not self.is_mounted or not self.size.width:
            return
        want = self.buckets
        if want != series.buckets and series.count > min(want, series.buckets):
            self.post_message(self.NeedsData(self, want))

    @property
    def render_seconds(self) -> float:
        return self.query_one(TimedPlot).render_seconds if self.is_mounted else 0.0

    def refresh_plot(self) -> None:
        if not self.is_mounted:
            return
        label, plot = self.query_one("#empty", Label), self.query_one(PlotextPlot)
        series = self._series
        has_data = series is not None and series.count > 0
        if label.display == has_data:  # setting display, even to the same value, re-runs the layout
            label.display = not has_data
            plot.display = has_data
        if not has_data:
            label.update(self.empty_message)
            return
        last = series.last_value
        if last is None:
            title = self.title
        else:
            title = f"{self.title}  {last:.4f}" if abs(last) < 1000 else f"{self.title}  {last:.4g}"
        if title != self._drawn_title:  # border_title reads back as markup: compare with what was set
            self.border_title = self._drawn_title = title
        xs = list(series.steps)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        if series.exact:
            plt.plot(xs, list(series.lows), marker="braille")
        else:
            plt.plot(xs, list(series.highs), marker="braille")
            plt.plot(xs, list(series.lows), marker="braille")
        color = _plot_color(app_palette(self.app).severity(Severity.CRITICAL, bold=False))
        for step in self._markers:
            if xs and xs[0] <= step <= xs[-1]:
                plt.vline(step, color)
        plot.refresh()


def _plot_color(style: str):
    """A theme colour as plotext takes it: an (r, g, b) tuple; its named red when the theme has none."""
    try:
        return Color.parse(style).rgb
    except ColorParseError:
        return "red"
