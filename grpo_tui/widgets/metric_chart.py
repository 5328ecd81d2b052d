"""A live chart of one metric, downsampled to the widget's width so a one-step spike is never lost.

Each horizontal bucket keeps its minimum and maximum (not a mean), and both are drawn: a spike in a
million-step run still shows as a spike. The full series stays on disk; only what fits is drawn.
Drawing is delegated to textual-plotext.
"""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label
from textual_plotext import PlotextPlot


class TimedPlot(PlotextPlot):
    """A PlotextPlot that remembers how long its last render took, so callers can pace redraws."""

    render_seconds = 0.0

    def render(self):
        started = time.perf_counter()
        try:
            return super().render()
        finally:
            self.render_seconds = time.perf_counter() - started


def downsample(steps, values, buckets: int) -> tuple[list[float], list[float], list[float]]:
    """(x, min, max) per bucket; at most ``buckets`` points, the extremes of every bucket preserved."""
    n = len(values)
    if n == 0:
        return [], [], []
    if n <= buckets:
        xs = list(steps)
        vals = list(values)
        return xs, vals, vals
    xs, lows, highs = [], [], []
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        if hi <= lo:
            continue
        chunk = values[lo:hi]
        xs.append(steps[hi - 1] if b == buckets - 1 else steps[lo])
        lows.append(min(chunk))
        highs.append(max(chunk))
    return xs, lows, highs


class MetricChart(Vertical):
    """Title, chart, and a plain-words line when there is nothing to draw (e.g. KL not measured)."""

    DEFAULT_CSS = """
    MetricChart { height: 1fr; min-height: 6; border: round $primary-darken-2; }
    MetricChart > Label { color: $text-muted; padding: 0 1; }
    MetricChart > PlotextPlot { height: 1fr; }
    """

    def __init__(self, key: str, title: str | None = None, *, empty_message: str | None = None, id: str | None = None):
        super().__init__(id=id)
        self.key = key
        self.title = title or key
        self.empty_message = empty_message or "no data yet"
        self.border_title = self.title
        self._series = None
        self._markers: list[int] = []

    def compose(self) -> ComposeResult:
        yield Label(self.empty_message, id="empty")
        yield TimedPlot()

    def on_mount(self) -> None:
        self.query_one(PlotextPlot).display = False

    def show(self, series, markers: list[int] | None = None) -> None:
        self._series = series
        self._markers = markers or []
        self.refresh_plot()

    def on_resize(self) -> None:
        self.refresh_plot()

    @property
    def render_seconds(self) -> float:
        return self.query_one(TimedPlot).render_seconds if self.is_mounted else 0.0

    def refresh_plot(self) -> None:
        if not self.is_mounted:
            return
        label, plot = self.query_one("#empty", Label), self.query_one(PlotextPlot)
        series = self._series
        has_data = series is not None and len(series) > 0
        if label.display == has_data:  # setting display, even to the same value, re-runs the layout
            label.display = not has_data
            plot.display = has_data
        if not has_data:
            label.update(self.empty_message)
            return
        last = series.values[-1]
        title = f"{self.title}  {last:.4f}" if abs(last) < 1000 else f"{self.title}  {last:.4g}"
        if title != self.border_title:
            self.border_title = title
        width = max(self.size.width - 8, 10)
        xs, lows, highs = downsample(series.steps, series.values, width)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        if lows is highs:
            plt.plot(xs, lows, marker="braille")
        else:
            plt.plot(xs, highs, marker="braille")
            plt.plot(xs, lows, marker="braille")
        for step in self._markers:
            if xs and xs[0] <= step <= series.steps[-1]:
                plt.vline(step, "red")
        plot.refresh()
