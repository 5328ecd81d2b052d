"""A chart's blocks turned into braille cells: where each dot goes, with no widget and no styles.

Every terminal cell of the plot is a braille character, 2 dots wide and 4 tall, so a chart ``P`` cells
wide has ``2P`` dot columns. Each dot column draws the full range (min to max) of the blocks that fall in
it, and reaches over to its neighbour's range, so the line stays connected and a one-step spike stands
out as a vertical stroke. Kept free of Textual so the geometry can be tested on its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BRAILLE = 0x2800
DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row in cell][column in cell]
FULL_COLUMN = (0x47, 0xB8)  # every dot of the cell's left, right column
# [side][first dot row][last dot row]: the bits of one column's dots from row a to row b within a cell
CELL_MASKS = tuple(
    tuple(tuple(sum(DOTS[r][side] for r in range(a, b + 1)) for b in range(4)) for a in range(4)) for side in range(2)
)
EMA_WEIGHT = 0.85  # per point drawn, as trackers smooth what they draw; debiased at the start


NICE = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)  # axis ends a reader takes in at a glance
TICKS = (1.0, 2.0, 2.5, 5.0, 10.0)


def _nice(x: float, choices) -> float:
    """The smallest of ``choices`` x 10^k that is at least ``x``."""
    scale = 10.0 ** math.floor(math.log10(x))
    return next(c * scale for c in choices if c * scale >= x * (1 - 1e-9))


def x_domain(first: int, last: int, window: int | None = None) -> tuple[int, int]:
    """The steps the plot spans. All steps: from the first to a round number at or past the last, so a live
    chart grows to the right instead of redrawing each step; a window: exactly its steps."""
    if window is not None:
        return max(first, last - window + 1), last
    length = max(last - first + 1, 2)
    return first, first - 1 + int(_nice(length, NICE))


def y_domain(lows, highs) -> tuple[float, float]:
    """The values the plot spans: the data's range widened to round ticks, so it changes only now and then."""
    if not lows:
        return 0.0, 1.0
    lo, hi = min(min(lows), min(highs)), max(max(lows), max(highs))
    if not (math.isfinite(lo) and math.isfinite(hi)):  # min() passes over a NaN unless it comes first
        finite = [v for v in (*lows, *highs) if math.isfinite(v)]
        if not finite:
            return 0.0, 1.0
        lo, hi = min(finite), max(finite)
    if hi == lo:
        pad = abs(lo) * 0.1 or 0.5
        lo, hi = lo - pad, hi + pad
    tick = _nice((hi - lo) / 4, TICKS)
    return math.floor(lo / tick) * tick, math.ceil(hi / tick) * tick


def column_of(step: float, x0: int, x1: int, dots: int) -> int:
    """The dot column ``step`` falls in, on a plot spanning steps ``x0``..``x1``."""
    return min(dots - 1, max(0, int((step - x0) * dots / (x1 - x0 + 1))))


def step_at(column: int, x0: int, x1: int, dots: int) -> int:
    """The first step drawn in dot column ``column``."""
    return x0 + -(-column * (x1 - x0 + 1) // dots)


def columns(
    steps, lows, highs, x0: int, x1: int, dots: int, kept: list | None = None, same: int = 0
) -> list[tuple[float, float] | None]:
    """(min, max) per dot column of the blocks starting at ``steps``; columns between two blocks are
    filled with the straight line joining them.

    ``kept``: this function's answer for the same axes when the first ``same`` blocks (all inside the
    axes) were the ones given now: the columns those blocks alone decide are taken from it, and only the
    rest is computed again (a live chart's new step changes its last block or adds one)."""
    out: list[tuple[float, float] | None] = [None] * dots
    scale, last = dots / (x1 - x0 + 1), dots - 1
    previous, begin = None, 0
    if kept is not None and len(kept) == dots and 0 < same < len(steps):

        def column(j: int) -> int:
            return min(int((steps[j] - x0) * scale), last)

        j = same  # the first block that may differ: start from the first block of its column
        while j > 0 and column(j - 1) == column(j):
            j -= 1
        if j > 0:  # the block before it anchors the line to it
            anchor = column(j - 1)
            out[: anchor + 1] = kept[: anchor + 1]
            previous, begin = (anchor, (lows[j - 1] + highs[j - 1]) / 2), j
    for step, lo, hi in zip(steps[begin:], lows[begin:], highs[begin:]):
        if step < x0 or step > x1:
            continue
        c = int((step - x0) * scale)  # column_of, inlined: this loop runs for every block of every redraw
        if c > last:
            c = last
        here = out[c]
        out[c] = (lo, hi) if here is None else (min(here[0], lo), max(here[1], hi))
        if previous is not None and c - previous[0] > 1:
            c0, v0 = previous
            v1 = (lo + hi) / 2
            for k in range(c0 + 1, c):
                v = v0 + (v1 - v0) * (k - c0) / (c - c0)
                out[k] = (v, v)
        previous = (c, (lo + hi) / 2)
    return out


def _dot_range(span: tuple[float, float], y_max: float, scale: float, bottom_dot: int) -> tuple[int, int]:
    """The top and bottom dot rows of one column's (min, max), on the plot."""
    lo, hi = span
    try:
        top, bottom = round((y_max - hi) * scale), round((y_max - lo) * scale)
    except (ValueError, OverflowError):  # NaN or an infinity: pinned to the edge it points to
        top = round((y_max - hi) * scale) if math.isfinite(hi) else (0 if hi > 0 else bottom_dot)
        bottom = round((y_max - lo) * scale) if math.isfinite(lo) else (0 if lo > 0 else bottom_dot)
    top = 0 if top < 0 else bottom_dot if top > bottom_dot else top
    bottom = 0 if bottom < 0 else bottom_dot if bottom > bottom_dot else bottom
    return top, bottom


def ema(values, weight: float = EMA_WEIGHT) -> list[float]:
    """Exponential moving average, debiased for the first points (TensorBoard's smoothing)."""
    out, last, n = [], 0.0, 0
    for v in values:
        n += 1
        last = last * weight + (1 - weight) * v
        out.append(last / (1 - weight**n))
    return out


@dataclass
class Raster:
    """Dot bits per cell, ``rows`` x ``width``: ``line`` (the series, or its EMA) over ``faint`` (the raw series
    behind an EMA); ``marker`` and ``cursor`` are cell columns."""

    rows: int
    width: int
    line: list[list[int]]
    faint: list[list[int]]
    marker: set[int]
    cursor: int | None = None

    @classmethod
    def blank(cls, rows: int, width: int) -> Raster:
        return cls(rows, width, [[0] * width for _ in range(rows)], [[0] * width for _ in range(rows)], set())

    def draw(
        self, spans: list[tuple[float, float] | None], y_min: float, y_max: float, faint: bool = False, start: int = 0
    ) -> None:
        """Set the dots of ``spans`` (one per dot column), each column joined to the one before it; from dot
        column ``start`` on (a redraw of the columns that changed, into cells cleared from there)."""
        grid = self.faint if faint else self.line
        bottom_dot = self.rows * 4 - 1
        scale = bottom_dot / (y_max - y_min) if y_max > y_min else 0.0
        before = spans[start - 1] if 0 < start <= len(spans) else None
        previous = None if before is None else _dot_range(before, y_max, scale, bottom_dot)
        for c in range(start, min(len(spans), self.width * 2)):
            span = spans[c]
            if span is None:
                previous = None
                continue
            here = top, bottom = _dot_range(span, y_max, scale, bottom_dot)
            if previous is not None:
                if bottom < previous[0] - 1:
                    bottom = previous[0] - 1
                elif top > previous[1] + 1:
                    top = previous[1] + 1
            previous = here
            cell, side = divmod(c, 2)
            masks = CELL_MASKS[side]
            first, last = top >> 2, bottom >> 2
            if first == last:
                grid[first][cell] |= masks[top & 3][bottom & 3]
                continue
            grid[first][cell] |= masks[top & 3][3]
            for r in range(first + 1, last):
                grid[r][cell] |= masks[0][3]
            grid[last][cell] |= masks[0][bottom & 3]

    def clear_from(self, cell: int) -> None:
        """Clear the series' cells from column ``cell`` on (markers are drawn over them afterwards)."""
        blank = [0] * max(self.width - cell, 0)
        for row in self.line:
            row[cell:] = blank

    def mark(self, column: int) -> None:
        """A vertical rule at dot column ``column`` (a warning's step)."""
        if 0 <= column < self.width * 2:
            self.marker.add(column // 2)
            for row in self.line:
                row[column // 2] |= FULL_COLUMN[column % 2]
