"""A live chart of one metric, drawn in braille cells straight from the blocks its screen hands it.

The snapshot it gets (``services/stream/folded.py``, built in the screen's reader thread) holds each block's
min, max and mean, about two blocks per dot column, so a one-step spike in a million-step run still shows
as a spike. The chart rasterises them itself (``chart_raster.py``) into cached strips: a redraw costs
the cells on screen, which is what lets it redraw whenever a step arrives. Around the plot (``chart_base.py``,
shared with the compare screen's chart): y labels, the first and last step, the title, the mouse. Here: the
metric's last value in the title, warnings as rules in the theme's error colour, an optional EMA with the raw
series faint behind it, a cursor that reads the block under it, and an overlay of single points (the
held-out eval of a step, ``◆`` in the theme's accent) on the same axes. After a rewind (run/rewinds.py) the series
is the live history; each abandoned stretch is drawn faint behind it, and the step each rewind went back to is a
rule in the theme's warning colour.
"""

from __future__ import annotations

import math
from bisect import bisect_right

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from grpo_tui.services.stream.folded import SeriesSnapshot

from . import chart_raster as raster
from .chart_base import CELLS, LABEL_WIDTH, TITLE_SECONDS, ChartBase, number
from .chart_raster import Raster

POINT = "◆"  # an overlaid point (a held-out eval): a whole cell, so it never reads as part of the line


class MetricChart(ChartBase):
    """One metric: a braille plot with axes, or a line in plain words when there is nothing to draw."""

    COMPONENT_CLASSES = {
        "metric-chart--line",
        "metric-chart--faint",
        "metric-chart--marker",
        "metric-chart--axis",
        "metric-chart--cursor",
        "metric-chart--point",
        "metric-chart--rewind",
    }
    DEFAULT_CSS = """
    MetricChart { height: 1fr; min-height: 6; border: round $primary-darken-2; }
    MetricChart .metric-chart--line { color: $primary-lighten-1; }
    MetricChart .metric-chart--faint { color: $primary-darken-2; }
    MetricChart .metric-chart--marker { color: $error; }
    MetricChart .metric-chart--axis { color: $text-muted; }
    MetricChart .metric-chart--cursor { background: $accent 40%; }
    MetricChart .metric-chart--point { color: $accent; text-style: bold; }
    MetricChart .metric-chart--rewind { color: $warning; }
    """

    def __init__(self, key: str, title: str | None = None, *, empty_message: str | None = None, id: str | None = None):
        super().__init__(key, title, empty_message=empty_message, id=id)
        self._series: SeriesSnapshot | None = None
        self._markers: tuple[int, ...] = ()
        self.abandoned: tuple[SeriesSnapshot, ...] = ()  # the stretches rewinds abandoned, drawn faint
        self.rewinds: tuple[int, ...] = ()  # the steps rewinds went back to, drawn as rules
        self._rewind_cells: frozenset[int] = frozenset()
        self.smooth = False
        self.points: tuple[tuple[int, float], ...] = ()  # (step, value) drawn over the series as POINT
        self.points_title = ""  # what the points are, after the series' title and value
        self._point_cells: dict[int, frozenset[int]] = {}  # plot row -> the cells holding a point
        self._spans_kept = None  # (axes and blocks, how many blocks, spans) of the last snapshot drawn
        self._kept = None  # (axes, spans, raster) of the last plain draw, to redraw only what changed
        self._row_keys: list = []  # what each plot row of ``_strips`` was drawn from (a row that matches is reused)

    # -- what the screen calls ---------------------------------------------------------------------------

    def show(
        self,
        series: SeriesSnapshot | None,
        markers=(),
        *,
        cursor: int | None = None,
        smooth: bool = False,
        points=(),
        points_title: str = "",
        abandoned=(),
        rewinds=(),
    ) -> None:
        """Draw ``series`` with warning ``markers`` (steps) and ``points`` ((step, value) pairs, named by
        ``points_title`` in the title) on the same axes; ``abandoned`` stretches faint behind it and the steps
        of ``rewinds`` as rules."""
        self._series = series
        self._markers = tuple(markers)
        self.abandoned = tuple(s for s in abandoned if s.steps and s.end_step is not None)
        self.rewinds = tuple(rewinds)
        self.cursor = cursor
        self.smooth = smooth
        self.points = tuple(points)
        self.points_title = points_title
        self.redraw()
        self._check_fit()

    def domain(self) -> tuple[int, int] | None:
        series = self._series
        if series is None or not series.steps or series.end_step is None:
            return None
        end = series.end_step
        if series.window is None:  # every step shown: the abandoned stretches too
            end = max([end, *(s.end_step for s in self.abandoned if s.end_step is not None)])
        return raster.x_domain(series.steps[0], end, series.window)

    # -- the hooks of ChartBase ---------------------------------------------------------------------------

    def _snapshots(self) -> tuple[SeriesSnapshot, ...]:
        return () if self._series is None else (self._series,)

    def _last_step(self) -> int:
        return self._drawn()[0].steps[-1]

    def _step_at(self, column: int) -> int:
        """The first step of the block drawn at dot column ``column`` (or the nearest one before it)."""
        return self._drawn()[0].steps[self._block_of(raster.step_at(column, *self._span(), self.buckets))]

    def _nudged(self, step: int, cells: int, target: int) -> int:
        return target  # the block's first step: a block is never narrower than a dot column

    def _title(self) -> tuple[str, str]:
        series = self._series
        last = series.last_value if series is not None else None
        title = self.title
        if last is not None:
            title = f"{title}  {last:.4f}" if abs(last) < 1000 else f"{title}  {last:.4g}"
        if self.points_title:
            return f"{title}  {POINT} {self.points_title}", f"{self.title}  {POINT} {self.points_title}"
        return title, self.title

    # -- drawing --------------------------------------------------------------------------------------------

    def _drawn(self) -> tuple[SeriesSnapshot, int]:
        """The series drawn and its last step: asked for only while there is one with data."""
        series = self._series
        assert series is not None and series.end_step is not None, "a chart without data has nothing drawn"
        return series, series.end_step

    def _block_of(self, step: int) -> int:
        steps = self._drawn()[0].steps
        return max(0, bisect_right(steps, step) - 1)

    def _subtitle(self) -> str:
        """The cursor's reading, the zoom and the smoothing, as much of it as fits under the chart."""
        series = self._series
        tail = []
        if series is not None and series.window is not None:
            tail.append(f"last {series.window:,} steps")
        if self.smooth:
            tail.append("EMA")
        readings = (
            self._readings(self.cursor) if series is not None and series.steps and self.cursor is not None else [""]
        )
        room = self.size.width - 4
        for reading in readings:
            text = " · ".join(part for part in (reading, *tail) if part)
            if len(text) <= room:
                return text
        return readings[-1]

    def _readings(self, cursor: int) -> list[str]:
        """What the cursor (a step) reads, from the most words to the fewest."""
        series, end_step = self._drawn()
        j = self._block_of(cursor)
        first = series.steps[j]
        last = series.steps[j + 1] - 1 if j + 1 < len(series.steps) else end_step
        lo, hi = series.lows[j], series.highs[j]
        if series.size == 1 or first == last:
            return [f"step {first:,}: {number(lo)}"]
        if lo == hi:
            return [f"steps {first:,}–{last:,}: {number(lo)}"]
        values = f"{number(lo)}…{number(hi)}"
        return [
            f"steps {first:,}–{last:,}: {values}, mean {number(series.means[j])}",
            f"steps {first:,}–{last:,}: {values}",
            f"{first:,}–{last:,}: {values}",
        ]

    def _plot(self, width: int, height: int) -> list[Strip]:
        series, last_step = self._drawn()
        steps, lows, highs = series.steps, series.lows, series.highs
        point_values = tuple(v for _, v in self.points)
        gone_lows = tuple(v for s in self.abandoned for v in s.lows)
        gone_highs = tuple(v for s in self.abandoned for v in s.highs)
        y_min, y_max = raster.y_domain((*lows, *gone_lows, *point_values), (*highs, *gone_highs, *point_values))
        labels = self._labels(height, y_min, y_max)
        rows, cells = max(height - 1, 1), self.plot_width
        dots = cells * 2
        x0, x1 = self._span()
        spans = self._spans(series, x0, x1, dots)
        if self.smooth:
            self._kept = None
            grid = Raster.blank(rows, cells)
            grid.draw(spans, y_min, y_max, faint=True)
            line = raster.ema(series.means)
            grid.draw(raster.columns(steps, line, line, x0, x1, dots), y_min, y_max)
        else:
            grid = self._plain_raster(spans, rows, cells, y_min, y_max)
        if self.abandoned and not self.smooth:
            grid.faint = [row[:] for row in grid.faint]  # the kept plain raster's rows stay blank
        for gone in self.abandoned:
            grid.draw(raster.columns(gone.steps, gone.lows, gone.highs, x0, x1, dots), y_min, y_max, faint=True)
        self._rewind_cells = frozenset(
            raster.column_of(step, x0, x1, dots) // 2 for step in self.rewinds if x0 <= step <= x1
        )
        for step in self._markers:
            if x0 <= step <= last_step:
                grid.mark(raster.column_of(step, x0, x1, dots))
        if self.cursor is not None:
            grid.cursor = raster.column_of(self.cursor, x0, x1, dots) // 2
        self._point_cells = self._place_points(x0, x1, dots, rows, y_min, y_max, series.window is None)
        styles = self._styles()
        # a row whose dots, label and context are those it was last drawn with keeps its strip
        faint = self.smooth or bool(self.abandoned)
        context = (self._style_theme, width, faint, frozenset(grid.marker), grid.cursor, self._rewind_cells)
        keys = [
            (
                context,
                labels.get(r, ""),
                tuple(grid.line[r]),
                tuple(grid.faint[r]) if faint else None,
                self._point_cells.get(r),
            )
            for r in range(rows)
        ]
        old_keys, old_strips = self._row_keys, self._strips
        reuse = len(old_keys) == rows and len(old_strips) == rows + 1
        strips = [
            old_strips[r] if reuse and old_keys[r] == keys[r] else self._row(grid, r, keys[r][1], styles, width)
            for r in range(rows)
        ]
        self._row_keys = keys
        strips.append(self._x_axis(x0, x1, cells, styles["axis"], width))
        return strips

    def _place_points(
        self, x0: int, x1: int, dots: int, rows: int, y_min: float, y_max: float, all_steps: bool
    ) -> dict[int, frozenset[int]]:
        """The cells of the points on these axes, by plot row. A point before the first step (the base
        model's eval at step 0) sits on the left edge while every step is shown; in a window it is off it."""
        cells: dict[int, set[int]] = {}
        bottom_dot = rows * 4 - 1
        scale = bottom_dot / (y_max - y_min) if y_max > y_min else 0.0
        for step, value in self.points:
            if step > x1 or (step < x0 and not all_steps) or not math.isfinite(value):
                continue
            dot = min(max(round((y_max - value) * scale), 0), bottom_dot)
            cells.setdefault(dot // 4, set()).add(raster.column_of(max(step, x0), x0, x1, dots) // 2)
        return {r: frozenset(found) for r, found in cells.items()}

    def _spans(self, series: SeriesSnapshot, x0: int, x1: int, dots: int) -> list:
        """The dot columns' spans, computed again only from the last block the previous snapshot had when
        the axes and the blocks' size and start are the same (its complete blocks cannot have changed)."""
        steps, lows, highs = series.steps, series.lows, series.highs
        key = (series.key, x0, x1, dots, series.size, steps[0])  # another metric paged in shares no span
        kept, same = None, 0
        if series.window is None and self._spans_kept is not None and self._spans_kept[0] == key:
            kept, same = self._spans_kept[2], self._spans_kept[1] - 1
        spans = raster.columns(steps, lows, highs, x0, x1, dots, kept, same)
        self._spans_kept = (key, len(steps), spans)
        return spans

    def _plain_raster(self, spans: list, rows: int, cells: int, y_min: float, y_max: float) -> Raster:
        """The series' dots, redrawn from the first dot column whose span changed since the last plain
        draw on the same axes (a live step changes the last columns only); markers go on a copy."""
        geometry, kept = (rows, cells, y_min, y_max), self._kept
        if kept is not None and kept[0] == geometry:
            _, old_spans, data = kept
            first = next((c for c, (a, b) in enumerate(zip(old_spans, spans)) if a != b), len(spans))
            if first < len(spans):
                start = first - first % 2  # a cell holds two dot columns: redraw both
                data.clear_from(start // 2)
                data.draw(spans, y_min, y_max, start=start)
        else:
            data = Raster.blank(rows, cells)
            data.draw(spans, y_min, y_max)
        self._kept = (geometry, spans, data)
        return Raster(rows, cells, [row[:] for row in data.line], data.faint, set())

    def _row(self, grid: Raster, r: int, label: str, styles: dict[str, Style], width: int) -> Strip:
        line_bits, faint_bits = grid.line[r], grid.faint[r]
        faint_drawn = self.smooth or bool(self.abandoned)
        rewinds = self._rewind_cells
        if faint_drawn:
            chars = "".join([CELLS[a | b] for a, b in zip(line_bits, faint_bits)])
        else:
            chars = "".join(map(CELLS.__getitem__, line_bits))
        if rewinds:  # a rule where the run went back, under the series' own dots
            chars = "".join("│" if x in rewinds and not line_bits[x] else ch for x, ch in enumerate(chars))
        segments = [self._label(label, styles["axis"])]
        points = self._point_cells.get(r, frozenset())
        if not (grid.marker or grid.cursor is not None or faint_drawn or points or rewinds):
            segments.append(Segment(chars, styles["line"]))
            return self._row_strip(segments, grid.width, width)
        if points:
            chars = "".join(POINT if x in points else ch for x, ch in enumerate(chars))
        line, faint, marker, point, cursor = (styles[k] for k in ("line", "faint", "marker", "point", "cursor"))
        rewind = styles["rewind"]
        start, run_style = 0, None
        for x in range(grid.width):
            if x in points:
                style = point
            elif x in rewinds and not line_bits[x]:
                style = rewind
            else:
                style = marker if x in grid.marker else line if line_bits[x] or not faint_bits[x] else faint
            if x == grid.cursor:
                style = style + cursor
            if style != run_style:
                if x > start:
                    segments.append(Segment(chars[start:x], run_style))
                start, run_style = x, style
        segments.append(Segment(chars[start:], run_style))
        return self._row_strip(segments, grid.width, width)


__all__ = ["CELLS", "LABEL_WIDTH", "POINT", "TITLE_SECONDS", "MetricChart", "number"]
