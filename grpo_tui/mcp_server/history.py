"""A metric's history in at most ``max_points`` points, cut into the same blocks the charts draw.

The monitor's series (``services/stream/series.py``) keep every step and blocks of power-of-two sizes
(``services/stream/buckets.py``): min, max and mean per block, so a one-step spike is never dropped. An answer
here is those blocks, so a 100,000-step run costs its point count, not a pass over the points, once the run's
stream is folded (and it is kept between calls: ``runs.Runs.stream``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

from grpo_tui.services.stream.buckets import BlockCache
from grpo_tui.services.stream.folded import RunStream

from .runs import AnswerError

MAX_POINTS = 5000


def history(stream: RunStream, key: str, start: int | None, end: int | None, max_points: int) -> dict[str, Any]:
    """One metric between steps ``start`` and ``end`` (inclusive; None: the run's first or last) as blocks."""
    series = stream.series.get(key)
    if series is None or not len(series):
        known = ", ".join(sorted(stream.series)) or "none yet: the run has logged no step"
        raise AnswerError(f"metric {key!r} is not in the run's history; its metrics: {known}")
    n = len(series)
    steps = series.steps
    first = 0 if start is None else bisect_left(steps, start, 0, n)
    stop = n if end is None else bisect_right(steps, end, 0, n)
    columns = max(1, max_points // 2 - 1)  # the blocks answer at least this many and fewer than twice as many
    if first >= stop:
        return _answer(key, 0, 1, [])
    if stop == n:
        values, cache = series.values, series.blocks  # the chart's own blocks, kept between calls
    else:
        values, cache = series.values[:stop], BlockCache()
    blocks = cache.blocks(values, first, columns)
    size = blocks.size
    points = [
        {
            "step": steps[i],
            "last_step": steps[min(i + size, stop) - 1],
            "min": _num(low),
            "max": _num(high),
            "mean": _num(mean),
        }
        for i, low, high, mean in zip(range(blocks.start, stop, size), blocks.lows, blocks.highs, blocks.means)
    ]
    return _answer(key, stop - first, size, points)


def _answer(key: str, count: int, size: int, points: list[dict]) -> dict[str, Any]:
    return {"key": key, "count": count, "block_size": size, "points": points}


def _num(value: float) -> float:
    return float(value) if value == value else 0.0  # the series hold numbers only: NaN is never a point


def check_max_points(max_points: int) -> int:
    if isinstance(max_points, bool) or not isinstance(max_points, int) or not 2 <= max_points <= MAX_POINTS:
        raise AnswerError(f"max_points {max_points!r}: give a whole number from 2 to {MAX_POINTS}")
    return max_points
