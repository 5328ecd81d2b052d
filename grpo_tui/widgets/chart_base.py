"""What every braille chart of the app shares: the frame around the plot, the mouse, and repainting only what changed.

The monitor's chart (``metric_chart.py``: one run's series, its warnings, an EMA, eval points) and the compare
screen's (``overlay_chart.py``: one series per run) differ in what they plot and what their cursor reads. The
rest is here, written once: the y labels and the x axis around the plot, the title (a live value in it shown
at most every TITLE_SECONDS) and the subtitle, the component styles looked up once per theme (the cursor
shades a cell, keeping its colour), the mouse (the wheel posts ``Zoom``, a click ``Pointed``), ``NeedsData``
when the chart's width no longer fits its snapshots, and a redraw that repaints only the lines that changed.

A chart says what it draws through the hooks below, which raise ``NotImplementedError`` here;
``tests/unit/test_chart_shared_code.py`` keeps the two charts from writing anything else twice.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget

from grpo_tui.services.stream.folded import SeriesSnapshot

from ..safe_text import clean_line
from . import chart_raster as raster
from .chart_messages import NeedsData, Pointed, Zoom
from .chart_raster import BRAILLE

LABEL_WIDTH = 7  # the y labels' column: ``number`` never writes more
TITLE_SECONDS = 0.5  # the value in a title changes no faster: a number changing faster cannot be read
CELLS = (" ", *(chr(BRAILLE + bits) for bits in range(1, 256)))  # a cell's character by its dots


def number(value: float) -> str:
    """A value in at most LABEL_WIDTH characters."""
    for spec in (".3g", ".2g", ".0e"):
        text = format(value, spec)
        if len(text) <= LABEL_WIDTH:
            return text
    return text


class ChartBase(Widget):
    """One metric: a braille plot with y labels on its left and its first and last step under it, or a line in
    plain words when there is nothing to draw. Subclasses name their styles ``<prefix>--<name>`` in
    ``COMPONENT_CLASSES``, with at least ``axis`` and ``cursor``."""

    EMPTY_MESSAGE = "no data yet"  # what the chart says with nothing to draw; ``{key}``: the metric

    def __init__(self, key: str, title: str | None = None, *, empty_message: str | None = None, id: str | None = None):
        super().__init__(id=id)
        self.key = key
        self.title = title or key
        self.empty_message = empty_message or self.EMPTY_MESSAGE.format(key=key)
        self.cursor: int | None = None  # a step
        self._strips: list[Strip] = []
        self._drawn_title = self.title
        self.border_title = Content(clean_line(self.title))  # a metric's name comes from a run: literal
        self._drawn_subtitle = ""
        self._title_at = self._redrawn_at = 0.0
        self._title_timer: Timer | None = None
        self._titled: str | None = None  # the fixed part (``_title``) of the title last shown
        self._style_theme: str | None = None
        self._style_cache: dict[str, Style] = {}

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.redraw())

    # -- what each chart says (hooks) ------------------------------------------------------------------------

    def domain(self) -> tuple[int, int] | None:
        """The steps the plot spans; None while there is nothing to draw."""
        raise NotImplementedError

    def _snapshots(self) -> Sequence[SeriesSnapshot]:
        """The snapshots the chart draws from: each should have about as many blocks as the plot dot columns."""
        raise NotImplementedError

    def _last_step(self) -> int:
        """Where the cursor goes first (asked for only while there is data)."""
        raise NotImplementedError

    def _step_at(self, column: int) -> int:
        """The step the cursor reads at dot column ``column`` (asked for only while there is data)."""
        raise NotImplementedError

    def _subtitle(self) -> str:
        """What goes under the chart: the cursor's reading, the zoom."""
        raise NotImplementedError

    def _plot(self, width: int, height: int) -> list[Strip]:
        """The plot's rows and the x axis, ``width`` cells wide (asked for only while there is data)."""
        raise NotImplementedError

    def _title(self) -> tuple[str, str]:
        """The title, and its fixed part (the title less its live value, if any): a new fixed part shows at
        once, a new value at most every TITLE_SECONDS."""
        raise NotImplementedError

    def _nudged(self, step: int, cells: int, target: int) -> int:
        """Where the cursor moved ``cells`` cells from ``step`` lands, given ``target``, the step its new
        column reads (asked for only while there is data)."""
        raise NotImplementedError

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
        return self.domain() is not None

    @property
    def text(self) -> str:
        """What the chart shows, as plain text (its cells without styles)."""
        return "\n".join(strip.text for strip in self._strips)

    def step_beside(self, step: int | None, cells: int) -> int | None:
        """The step ``cells`` cells to the right of ``step`` (left if negative); the last step when None."""
        span = self.domain()
        if span is None:
            return None
        if step is None:
            return self._last_step()
        column = raster.column_of(step, *span, self.buckets) + 2 * cells
        return self._nudged(step, cells, self._step_at(min(max(column, 0), self.buckets - 1)))

    def _span(self) -> tuple[int, int]:
        """The domain, asked for only while there is data."""
        span = self.domain()
        assert span is not None, "a chart without data spans no steps"
        return span

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
        if not self.is_mounted or not self.size.width:
            return
        want = self.buckets
        if any(s.buckets != want and s.count > min(want, s.buckets) for s in self._snapshots()):
            self.post_message(NeedsData(self, want))

    # -- drawing --------------------------------------------------------------------------------------------

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

    def _styles(self) -> dict[str, Style]:
        """The component styles by name, looked up once per theme (the lookup costs more than drawing a row);
        ``cursor`` is only its background, added to the style of the cell it shades."""
        theme = self.app.theme
        if self._style_theme != theme:
            self._style_theme = theme
            styles = {name.split("--", 1)[1]: self.get_component_rich_style(name) for name in self.COMPONENT_CLASSES}
            styles["cursor"] = Style(bgcolor=styles["cursor"].bgcolor)
            self._style_cache = styles
        return self._style_cache

    def _set_titles(self) -> None:
        title, fixed = self._title()
        if title != self._drawn_title:  # border_title reads back as markup: compare with what was set
            now = time.monotonic()
            if title == fixed or self._titled != fixed or now - self._title_at >= TITLE_SECONDS:
                self._drawn_title, self._titled, self._title_at = title, fixed, now
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

    # -- the frame around the plot, for ``_plot`` -------------------------------------------------------------

    @staticmethod
    def _labels(height: int, y_min: float, y_max: float) -> dict[int, str]:
        """The y labels by plot row: the top, the bottom, and the middle when there is room."""
        labels = {0: number(y_max), height - 2: number(y_min)}
        if height >= 6:
            labels[(height - 2) // 2] = number((y_min + y_max) / 2)
        return labels

    @staticmethod
    def _label(label: str, style: Style) -> Segment:
        """A row's y label and the axis beside it, the segment each plot row starts with."""
        return Segment(label.rjust(LABEL_WIDTH) + ("┤" if label else "│"), style)

    @staticmethod
    def _strip(segments: list[Segment], width: int) -> Strip:
        strip = Strip(segments)
        return strip if strip.cell_length == width else strip.extend_cell_length(width).crop(0, width)

    def _row_strip(self, segments: list[Segment], cells: int, width: int) -> Strip:
        """A plot row's strip. Its width is known (the label column, then one cell per plot cell): saying so
        spares Textual measuring the braille text character by character."""
        if LABEL_WIDTH + 1 + cells == width:  # as wide as the chart (it is, unless the chart is tiny)
            return Strip(segments, width)
        return self._strip(segments, width)

    def _x_axis(self, first_step: int, end_step: int, cells: int, style: Style, width: int) -> Strip:
        left, right = f"{first_step:,}", f"{end_step:,}"
        text = left + right.rjust(cells - len(left)) if cells > len(left) + len(right) else right.rjust(cells)
        return self._strip([Segment(" " * (LABEL_WIDTH + 1) + text, style)], width)


__all__ = ["CELLS", "LABEL_WIDTH", "TITLE_SECONDS", "ChartBase", "number"]
