"""One metric of several runs on one braille chart, each run in its own colour: what the compare screen draws.

It is the monitor's chart (``metric_chart.py``) with more than one series: the same blocks (each block's
min, max and mean, so a one-step spike still shows), the same rasteriser (``chart_raster.py``), and the same
frame around the plot (``chart_base.py``: axes in round numbers, title, cursor, mouse). The runs share one x
range (from the first step any of them logged to the last) and one y range. Each run is rasterised on its
own and the cells are merged: a cell shows every run's dots, in the colour of the first run (in legend
order) that has dots there.

Colours are the themes' ``chart-series-N`` variables (``SERIES_COLOURS``), never a warning's colour, so the
legend (``series_colour``) and the chart agree and a new theme redraws both. The chart never reads a run:
its screen hands it one snapshot per run.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from rich.segment import Segment
from textual.strip import Strip

from grpo_tui.services.stream.folded import SeriesSnapshot

from . import chart_raster as raster
from .chart_base import CELLS, ChartBase, number
from .chart_raster import Raster

# theme roles every theme has, distinct from one another in the shipped themes for the first five runs
SERIES_COLOURS = tuple(f"$chart-series-{n}" for n in range(1, 7))  # every theme defines them, none a warning colour


def series_colour(index: int) -> str:
    """The theme variable run ``index`` is drawn in (colours repeat after ``len(SERIES_COLOURS)`` runs)."""
    return SERIES_COLOURS[index % len(SERIES_COLOURS)]


def _has_data(series: SeriesSnapshot | None) -> bool:
    return series is not None and bool(series.count) and bool(series.steps) and series.end_step is not None


def reading(series: SeriesSnapshot | None, step: int) -> str | None:
    """What ``series`` reads at ``step``: the value, or a block's min…max; None where it has no data."""
    if series is None or not series.steps or series.end_step is None:
        return None
    if step < series.steps[0] or step > series.end_step:
        return None
    j = max(0, bisect_right(series.steps, step) - 1)
    lo, hi = series.lows[j], series.highs[j]
    return number(lo) if lo == hi else f"{number(lo)}…{number(hi)}"


class OverlayChart(ChartBase):
    """One metric, one series per run, overlaid; a line in plain words when no run logged the metric."""

    COMPONENT_CLASSES = {
        "overlay-chart--axis",
        "overlay-chart--cursor",
        *(f"overlay-chart--series-{i}" for i in range(len(SERIES_COLOURS))),
    }
    DEFAULT_CSS = """
    OverlayChart { height: 1fr; min-height: 6; border: round $primary-darken-2; }
    OverlayChart .overlay-chart--axis { color: $text-muted; }
    OverlayChart .overlay-chart--cursor { background: $accent 40%; }
    """ + "".join(
        f"    OverlayChart .overlay-chart--series-{i} {{ color: {colour}; }}\n"
        for i, colour in enumerate(SERIES_COLOURS)
    )
    EMPTY_MESSAGE = "no run here logged {key}"

    series: tuple[SeriesSnapshot | None, ...] = ()  # one per run, in legend order (set by ``show``)
    window: int | None = None

    # -- what the screen calls ---------------------------------------------------------------------------

    @property
    def drawn(self) -> list[SeriesSnapshot]:
        """The runs' series that have something to draw."""
        return [s for s in self.series if s is not None and _has_data(s)]

    def show(
        self, series: Sequence[SeriesSnapshot | None], *, window: int | None = None, cursor: int | None = None
    ) -> None:
        """Draw one snapshot per run (None: the run did not log this metric), in legend order."""
        self.series = tuple(series)
        self.window = window
        self.cursor = cursor
        self.redraw()
        self._check_fit()

    def domain(self) -> tuple[int, int] | None:
        """The steps the plot spans: every run's, or the newest ``window`` of them; None without data."""
        drawn = self.drawn
        if not drawn:
            return None
        first = min(s.steps[0] for s in drawn)
        last = max(s.end_step for s in drawn if s.end_step is not None)
        return raster.x_domain(first, last, self.window)

    def readings(self, step: int) -> list[str | None]:
        """Each run's value at ``step`` (None where that run has none), in legend order."""
        return [reading(s, step) for s in self.series]

    # -- the hooks of ChartBase ---------------------------------------------------------------------------

    def _snapshots(self) -> list[SeriesSnapshot]:
        return self.drawn

    def _last_step(self) -> int:
        return max(s.end_step for s in self.drawn if s.end_step is not None)

    def _step_at(self, column: int) -> int:
        return raster.step_at(column, *self._span(), self.buckets)

    def _nudged(self, step: int, cells: int, target: int) -> int:
        """A cell can be narrower than a step: the cursor moves by one step at least, and stays on the runs."""
        if cells < 0 and target >= step:
            target = step - 1
        elif cells > 0 and target <= step:
            target = step + 1
        return min(max(target, self._span()[0]), self._last_step())

    def _title(self) -> tuple[str, str]:
        return self.title, self.title  # the metric's name (and the keys' hint): no live value

    def _subtitle(self) -> str:
        parts = []
        if self.cursor is not None and self.has_data:
            parts.append(f"step {self.cursor:,}")
        if self.window is not None:
            parts.append(f"last {self.window:,} steps")
        return " · ".join(parts)

    def _plot(self, width: int, height: int) -> list[Strip]:
        x0, x1 = self._span()
        drawn = self.drawn
        styles = self._styles()
        axis, cursor = styles["axis"], styles["cursor"]
        colours = [styles[f"series-{i}"] for i in range(len(SERIES_COLOURS))]
        y_min, y_max = raster.y_domain([v for s in drawn for v in s.lows], [v for s in drawn for v in s.highs])
        rows, cells = max(height - 1, 1), self.plot_width
        dots = cells * 2
        grids: list[tuple[int, Raster]] = []
        for index, series in enumerate(self.series):
            if series is None or not _has_data(series):
                continue
            grid = Raster.blank(rows, cells)
            grid.draw(raster.columns(series.steps, series.lows, series.highs, x0, x1, dots), y_min, y_max)
            grids.append((index, grid))
        cursor_cell = None if self.cursor is None else raster.column_of(self.cursor, x0, x1, dots) // 2
        labels = self._labels(height, y_min, y_max)
        strips = []
        for r in range(rows):
            segments = [self._label(labels.get(r, ""), axis)]
            chars, cell_styles = [], []
            for x in range(cells):
                bits, owner = 0, None
                for index, grid in grids:
                    here = grid.line[r][x]
                    if here:
                        bits |= here
                        if owner is None:
                            owner = index
                style = colours[owner % len(colours)] if owner is not None else axis
                if x == cursor_cell:
                    style = style + cursor
                chars.append(CELLS[bits])
                cell_styles.append(style)
            start = 0
            for x in range(1, cells + 1):
                if x == cells or cell_styles[x] != cell_styles[start]:
                    segments.append(Segment("".join(chars[start:x]), cell_styles[start]))
                    start = x
            strips.append(self._row_strip(segments, cells, width))
        strips.append(self._x_axis(x0, x1, cells, axis, width))
        return strips


__all__ = ["SERIES_COLOURS", "OverlayChart", "reading", "series_colour"]
