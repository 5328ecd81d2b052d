"""One metric of several runs on one braille chart, each run in its own colour: what the compare screen draws.

It is the monitor's chart (``metric_chart.py``) with more than one series: the same blocks (each block's
min, max and mean, so a one-step spike still shows), the same rasteriser (``chart_raster.py``), the same
axes in round numbers, zoom windows and cursor. The runs share one x range (from the first step any of
them logged to the last) and one y range. Each run is rasterised on its own and the cells are merged: a
cell shows every run's dots, in the colour of the first run (in legend order) that has dots there.

Colours are the themes' ``chart-series-N`` variables (``SERIES_COLOURS``), never a warning's colour, so the legend (``series_colour``) and the chart agree and a
new theme redraws both. The chart never reads a run: its screen hands it one snapshot per run.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.content import Content
from textual.strip import Strip
from textual.widget import Widget

from grpo_tui.services.stream.folded import SeriesSnapshot

from ..safe_text import clean_line
from . import chart_raster as raster
from .chart_messages import NeedsData, Pointed, Zoom
from .chart_raster import Raster
from .metric_chart import CELLS, LABEL_WIDTH, number

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


class OverlayChart(Widget):
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

    def __init__(self, key: str, title: str | None = None, *, empty_message: str | None = None, id: str | None = None):
        super().__init__(id=id)
        self.key = key
        self.title = title or key
        self.empty_message = empty_message or f"no run here logged {key}"
        self.series: tuple[SeriesSnapshot | None, ...] = ()
        self.window: int | None = None
        self.cursor: int | None = None
        self._strips: list[Strip] = []
        self.border_title = Content(clean_line(self.title))  # a metric's name comes from the runs: literal

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.redraw())

    # -- what the screen calls ---------------------------------------------------------------------------

    @property
    def plot_width(self) -> int:
        return max(self.size.width - LABEL_WIDTH - 1, 5)

    @property
    def buckets(self) -> int:
        """Dot columns across the plot: what each run's snapshot should have at least as many blocks as."""
        return self.plot_width * 2

    @property
    def drawn(self) -> list[SeriesSnapshot]:
        """The runs' series that have something to draw."""
        return [s for s in self.series if s is not None and _has_data(s)]

    @property
    def has_data(self) -> bool:
        return bool(self.drawn)

    @property
    def text(self) -> str:
        """What the chart shows, as plain text (its cells without styles)."""
        return "\n".join(strip.text for strip in self._strips)

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

    def step_beside(self, step: int | None, cells: int) -> int | None:
        """The step ``cells`` cells to the right of ``step`` (left if negative); the last step when None."""
        span = self.domain()
        if span is None:
            return None
        x0, x1 = span
        last = max(s.end_step for s in self.drawn if s.end_step is not None)
        if step is None:
            return last
        column = raster.column_of(step, x0, x1, self.buckets) + 2 * cells
        target = raster.step_at(min(max(column, 0), self.buckets - 1), x0, x1, self.buckets)
        if cells < 0 and target >= step:  # a cell narrower than a step: move by one step at least
            target = step - 1
        elif cells > 0 and target <= step:
            target = step + 1
        return min(max(target, x0), last)

    def readings(self, step: int) -> list[str | None]:
        """Each run's value at ``step`` (None where that run has none), in legend order."""
        return [reading(s, step) for s in self.series]

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
        span = self.domain()
        column = None if offset is None else (offset.x - LABEL_WIDTH - 1) * 2
        if span is not None and column is not None and 0 <= column < self.buckets:
            event.stop()
            self.post_message(Pointed(self, raster.step_at(column, *span, self.buckets)))

    def _check_fit(self) -> None:
        drawn = self.drawn
        if not drawn or not self.is_mounted or not self.size.width:
            return
        want = self.buckets
        if any(s.buckets != want and s.count > min(want, s.buckets) for s in drawn):
            self.post_message(NeedsData(self, want))

    # -- drawing --------------------------------------------------------------------------------------------

    def _styles(self) -> tuple[Style, Style, list[Style]]:
        series = [self.get_component_rich_style(f"overlay-chart--series-{i}") for i in range(len(SERIES_COLOURS))]
        return (
            self.get_component_rich_style("overlay-chart--axis"),
            Style(bgcolor=self.get_component_rich_style("overlay-chart--cursor").bgcolor),
            series,
        )

    def redraw(self) -> None:
        if not self.is_mounted:
            return
        subtitle = self._subtitle()
        self.border_subtitle = Content(clean_line(subtitle))
        width, height = self.size.width, self.size.height
        if width <= 0 or height <= 0:
            return
        axis, cursor, colours = self._styles()
        span = self.domain()
        if span is None:
            self._strips = [_strip([Segment(self.empty_message, axis)], width)]
        else:
            self._strips = self._plot(span, width, height, axis, cursor, colours)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        return self._strips[y] if y < len(self._strips) else Strip.blank(self.size.width)

    def _subtitle(self) -> str:
        parts = []
        if self.cursor is not None and self.has_data:
            parts.append(f"step {self.cursor:,}")
        if self.window is not None:
            parts.append(f"last {self.window:,} steps")
        return " · ".join(parts)

    def _plot(
        self, span: tuple[int, int], width: int, height: int, axis: Style, cursor: Style, colours: list[Style]
    ) -> list[Strip]:
        x0, x1 = span
        drawn = self.drawn
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
        labels = {0: number(y_max), height - 2: number(y_min)}
        if height >= 6:
            labels[(height - 2) // 2] = number((y_min + y_max) / 2)
        strips = []
        for r in range(rows):
            label = labels.get(r, "")
            segments = [Segment(label.rjust(LABEL_WIDTH) + ("┤" if label else "│"), axis)]
            chars, styles = [], []
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
                styles.append(style)
            start = 0
            for x in range(1, cells + 1):
                if x == cells or styles[x] != styles[start]:
                    segments.append(Segment("".join(chars[start:x]), styles[start]))
                    start = x
            strips.append(_strip(segments, width))
        left, right = f"{x0:,}", f"{x1:,}"
        text = left + right.rjust(cells - len(left)) if cells > len(left) + len(right) else right.rjust(cells)
        strips.append(_strip([Segment(" " * (LABEL_WIDTH + 1) + text, axis)], width))
        return strips


def _strip(segments: list[Segment], width: int) -> Strip:
    strip = Strip(segments)
    return strip if strip.cell_length == width else strip.extend_cell_length(width).crop(0, width)


__all__ = ["SERIES_COLOURS", "OverlayChart", "reading", "series_colour"]
