"""A live chart of one metric, drawn in braille cells straight from the blocks its screen hands it.

The snapshot it gets (``services/stream/folded.py``, built in the screen's reader thread) holds each block's
min, max and mean, about two blocks per dot column, so a one-step spike in a million-step run still shows
as a spike. The chart rasterises them itself (``chart_raster.py``) into cached strips: a redraw costs
the cells on screen, which is what lets it redraw whenever a step arrives. Around the plot: the metric and
its last value in the title, y labels, the first and last step, warnings as rules in the theme's error
colour, an optional EMA with the raw series faint behind it, a cursor that reads the values under it, and
an overlay of single points (the held-out eval of a step, ``◆`` in the theme's accent) on the same axes.
When the chart's width changes so that its snapshot no longer fits, it posts ``NeedsData``; the mouse
wheel posts ``Zoom`` and a click ``Pointed``, and the screen decides for all its charts at once.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_right

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from grpo_tui.services.stream.folded import SeriesSnapshot

from ..safe_text import clean_line
from . import chart_raster as raster
from .chart_messages import NeedsData, Pointed, Zoom
from .chart_raster import BRAILLE, Raster

LABEL_WIDTH = 7  # the y labels' column: ``number`` never writes more
TITLE_SECONDS = 0.5  # the value in a title changes no faster: a number changing faster cannot be read
CELLS = (" ", *(chr(BRAILLE + bits) for bits in range(1, 256)))  # a cell's character by its dots
POINT = "◆"  # an overlaid point (a held-out eval): a whole cell, so it never reads as part of the line


def number(value: float) -> str:
    """A value in at most LABEL_WIDTH characters."""
    for spec in (".3g", ".2g", ".0e"):
        text = format(value, spec)
        if len(text) <= LABEL_WIDTH:
            return text
    return text


class MetricChart(Widget):
    """One metric: a braille plot with axes, or a line in plain words when there is nothing to draw."""

    COMPONENT_CLASSES = {
        "metric-chart--line",
        "metric-chart--faint",
        "metric-chart--marker",
        "metric-chart--axis",
        "metric-chart--cursor",
        "metric-chart--point",
    }
    DEFAULT_CSS = """
    MetricChart { height: 1fr; min-height: 6; border: round $primary-darken-2; }
    MetricChart .metric-chart--line { color: $primary-lighten-1; }
    MetricChart .metric-chart--faint { color: $primary-darken-2; }
    MetricChart .metric-chart--marker { color: $error; }
    MetricChart .metric-chart--axis { color: $text-muted; }
    MetricChart .metric-chart--cursor { background: $accent 40%; }
    MetricChart .metric-chart--point { color: $accent; text-style: bold; }
    """

    def __init__(self, key: str, title: str | None = None, *, empty_message: str | None = None, id: str | None = None):
        super().__init__(id=id)
        self.key = key
        self.title = title or key
        self.empty_message = empty_message or "no data yet"
        self._drawn_title = self.title
        self.border_title = Content(clean_line(self.title))  # a metric's name comes from the run: literal
        self._drawn_subtitle = ""
        self._series: SeriesSnapshot | None = None
        self._markers: tuple[int, ...] = ()
        self.cursor: int | None = None  # a step
        self.smooth = False
        self.points: tuple[tuple[int, float], ...] = ()  # (step, value) drawn over the series as POINT
        self.points_title = ""  # what the points are, after the series' title and value
        self._point_cells: dict[int, frozenset[int]] = {}  # plot row -> the cells holding a point
        self._strips: list[Strip] = []
        self._title_at = self._redrawn_at = 0.0
        self._title_timer = None
        self._titled: tuple[str, str] | None = None  # the title and points' title last shown
        self._spans_kept = None  # (axes and blocks, how many blocks, spans) of the last snapshot drawn
        self._kept = None  # (axes, spans, raster) of the last plain draw, to redraw only what changed
        self._row_keys: list = []  # what each plot row of ``_strips`` was drawn from (a row that matches is reused)
        self._style_theme: str | None = None
        self._style_cache: dict[str, Style] = {}

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.redraw())

    # -- what the screen calls ---------------------------------------------------------------------------

    @property
    def plot_width(self) -> int:
        """Cells across the plot: the width less the y labels and the axis."""
        return max(self.size.width - LABEL_WIDTH - 1, 5)

    @property
    def buckets(self) -> int:
        """Dot columns across the plot: what a snapshot for this chart should have at least as many blocks as."""
        return self.plot_width * 2

    @property
    def has_data(self) -> bool:
        return self._series is not None and self._series.count > 0

    def show(
        self,
        series: SeriesSnapshot | None,
        markers=(),
        *,
        cursor: int | None = None,
        smooth: bool = False,
        points=(),
        points_title: str = "",
    ) -> None:
        """Draw ``series`` with warning ``markers`` (steps) and ``points`` ((step, value) pairs, named by
        ``points_title`` in the title) on the same axes."""
        self._series = series
        self._markers = tuple(markers)
        self.cursor = cursor
        self.smooth = smooth
        self.points = tuple(points)
        self.points_title = points_title
        self.redraw()
        self._check_fit()

    @property
    def text(self) -> str:
        """What the chart shows, as plain text (its cells without styles)."""
        return "\n".join(strip.text for strip in self._strips)

    def step_beside(self, step: int | None, cells: int) -> int | None:
        """The step ``cells`` cells to the right of ``step`` (left if negative); the last step when None."""
        series = self._series
        if series is None or not series.steps:
            return None
        if step is None:
            return series.steps[-1]
        x0, x1 = self._domain()
        column = raster.column_of(step, x0, x1, self.buckets) + 2 * cells
        return self._step_at(min(max(column, 0), self.buckets - 1))

    # -- events ---------------------------------------------------------------------------------------------

    def on_resize(self) -> None:
        self.redraw()
        self._check_fit()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self.post_message(Zoom(self, 1))

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self.post_message(Zoom(self, -1))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        column = None if offset is None else (offset.x - LABEL_WIDTH - 1) * 2
        if self.has_data and column is not None and 0 <= column < self.buckets:
            event.stop()
            self.post_message(Pointed(self, self._step_at(column)))

    def _check_fit(self) -> None:
        series = self._series
        if series is None or not self.is_mounted or not self.size.width:
            return
        want = self.buckets
        if want != series.buckets and series.count > min(want, series.buckets):
            self.post_message(NeedsData(self, want))

    # -- drawing --------------------------------------------------------------------------------------------

    def _drawn(self) -> tuple[SeriesSnapshot, int]:
        """The series drawn and its last step: asked for only while there is one with data."""
        series = self._series
        assert series is not None and series.end_step is not None, "a chart without data has nothing drawn"
        return series, series.end_step

    def _block_of(self, step: int) -> int:
        steps = self._drawn()[0].steps
        return max(0, bisect_right(steps, step) - 1)

    def _step_at(self, column: int) -> int:
        """The first step of the block drawn at dot column ``column`` (or the nearest one before it)."""
        x0, x1 = self._domain()
        return self._drawn()[0].steps[self._block_of(raster.step_at(column, x0, x1, self.buckets))]

    def _domain(self) -> tuple[int, int]:
        series, end_step = self._drawn()
        return raster.x_domain(series.steps[0], end_step, series.window)

    def redraw(self) -> None:
        if not self.is_mounted:
            return
        self._redrawn_at = time.monotonic()
        self._set_titles()
        width, height = self.size.width, self.size.height
        if width <= 0 or height <= 0:
            return
        if not self.has_data:
            strips = [self._strip([Segment(self.empty_message, self._styles()["axis"])], width)]
            self._row_keys = []
        else:
            strips = self._plot(width, height)
        before, self._strips = self._strips, strips
        if len(before) != len(strips) or (before and before[0].cell_length != width):
            self.refresh()
            return
        # whole lines, borders included: Textual sends a widget's line from its left edge anyway, and a line
        # that stops short of its right edge costs it a copy of the line (a crop) on every frame
        outer = self.outer_size.width
        changed = [
            Region(-1, y, outer, 1) for y, (old, new) in enumerate(zip(before, strips)) if old is not new and old != new
        ]
        if changed:  # only the lines that changed go to the screen
            self.refresh(*changed)

    def render_line(self, y: int) -> Strip:
        return self._strips[y] if y < len(self._strips) else Strip.blank(self.size.width)

    @staticmethod
    def _strip(segments: list[Segment], width: int) -> Strip:
        strip = Strip(segments)
        return strip if strip.cell_length == width else strip.extend_cell_length(width).crop(0, width)

    def _styles(self) -> dict[str, Style]:
        """The component styles, looked up once per theme (the lookup costs more than drawing a row)."""
        theme = self.app.theme
        if self._style_theme != theme:
            self._style_theme = theme
            self._style_cache = {
                name: self.get_component_rich_style(f"metric-chart--{name}")
                for name in ("line", "faint", "marker", "axis", "cursor", "point")
            }
        return self._style_cache

    def _set_titles(self) -> None:
        series = self._series
        last = series.last_value if series is not None else None
        if last is None:
            title = self.title
        else:
            title = f"{self.title}  {last:.4f}" if abs(last) < 1000 else f"{self.title}  {last:.4g}"
        if self.points_title:
            title = f"{title}  {POINT} {self.points_title}"
        named = (self.title, self.points_title)
        if title != self._drawn_title:  # border_title reads back as markup: compare with what was set
            now = time.monotonic()
            if last is None or self._titled != named or now - self._title_at >= TITLE_SECONDS:
                self._drawn_title, self._titled, self._title_at = title, named, now
                self._retitle(title)
            elif self._title_timer is None:
                self._title_timer = self.set_timer(TITLE_SECONDS * 2, self._late_title)
        subtitle = self._subtitle()
        if subtitle != self._drawn_subtitle:
            self._drawn_subtitle = subtitle
            self.border_subtitle = Content(clean_line(subtitle))

    def _late_title(self) -> None:
        """Redraws stopped coming (the run ended or paused) before the newest value was shown: show it."""
        self._title_timer = None
        if time.monotonic() - self._redrawn_at < TITLE_SECONDS:  # they still come: the next one will
            self._title_timer = self.set_timer(TITLE_SECONDS * 2, self._late_title)
            return
        self._title_at = 0.0
        self._set_titles()

    def _retitle(self, title: str) -> None:
        """Set the border title, repainting the top line only: Textual's ``border_title`` setter repaints
        the whole widget (and makes a frame of its own when set outside a redraw); this stores what the
        setter stores (Textual is pinned). A new value waits for the first redraw TITLE_SECONDS after the
        last; ``_late_title`` shows it when no redraw comes."""
        self._border_title = Content(clean_line(title)).expand_tabs(4).split()[0]
        self.refresh(Region(-1, -1, self.outer_size.width, 1))  # content coordinates: the border is above

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
        y_min, y_max = raster.y_domain((*lows, *point_values), (*highs, *point_values))
        labels = {0: number(y_max), height - 2: number(y_min)}
        if height >= 6:
            labels[(height - 2) // 2] = number((y_min + y_max) / 2)
        rows, cells = max(height - 1, 1), self.plot_width
        dots = cells * 2
        x0, x1 = self._domain()
        spans = self._spans(series, x0, x1, dots)
        if self.smooth:
            self._kept = None
            grid = Raster.blank(rows, cells)
            grid.draw(spans, y_min, y_max, faint=True)
            line = raster.ema(series.means)
            grid.draw(raster.columns(steps, line, line, x0, x1, dots), y_min, y_max)
        else:
            grid = self._plain_raster(spans, rows, cells, y_min, y_max)
        for step in self._markers:
            if x0 <= step <= last_step:
                grid.mark(raster.column_of(step, x0, x1, dots))
        if self.cursor is not None:
            grid.cursor = raster.column_of(self.cursor, x0, x1, dots) // 2
        self._point_cells = self._place_points(x0, x1, dots, rows, y_min, y_max, series.window is None)
        first_step, end_step = x0, x1
        styles = self._styles()
        # a row whose dots, label and context are those it was last drawn with keeps its strip
        context = (self._style_theme, width, self.smooth, frozenset(grid.marker), grid.cursor)
        keys = [
            (
                context,
                labels.get(r, ""),
                tuple(grid.line[r]),
                tuple(grid.faint[r]) if self.smooth else None,
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
        strips.append(self._x_axis(first_step, end_step, cells, styles, width))
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
        key = (x0, x1, dots, series.size, steps[0])
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
        if self.smooth:
            chars = "".join([CELLS[a | b] for a, b in zip(line_bits, faint_bits)])
        else:
            chars = "".join(map(CELLS.__getitem__, line_bits))
        segments = [Segment(label.rjust(LABEL_WIDTH) + ("┤" if label else "│"), styles["axis"])]
        points = self._point_cells.get(r, frozenset())
        if not (grid.marker or grid.cursor is not None or self.smooth or points):
            segments.append(Segment(chars, styles["line"]))
            return self._row_strip(segments, grid, width)
        if points:
            chars = "".join(POINT if x in points else ch for x, ch in enumerate(chars))
        line, faint, marker, point = styles["line"], styles["faint"], styles["marker"], styles["point"]
        cursor = Style(bgcolor=styles["cursor"].bgcolor)
        start, run_style = 0, None
        for x in range(grid.width):
            if x in points:
                style = point
            else:
                style = marker if x in grid.marker else line if line_bits[x] or not faint_bits[x] else faint
            if x == grid.cursor:
                style = style + cursor
            if style != run_style:
                if x > start:
                    segments.append(Segment(chars[start:x], run_style))
                start, run_style = x, style
        segments.append(Segment(chars[start:], run_style))
        return self._row_strip(segments, grid, width)

    def _row_strip(self, segments: list[Segment], grid: Raster, width: int) -> Strip:
        """A row's strip. Its width is known (the label column, then one cell per plot cell): saying so
        spares Textual measuring the braille text character by character."""
        if LABEL_WIDTH + 1 + grid.width == width:  # as wide as the chart (it is, unless the chart is tiny)
            return Strip(segments, width)
        return self._strip(segments, width)

    def _x_axis(self, first_step: int, end_step: int, cells: int, styles: dict[str, Style], width: int) -> Strip:
        left, right = f"{first_step:,}", f"{end_step:,}"
        text = left + right.rjust(cells - len(left)) if cells > len(left) + len(right) else right.rjust(cells)
        return self._strip([Segment(" " * (LABEL_WIDTH + 1) + text, styles["axis"])], width)
