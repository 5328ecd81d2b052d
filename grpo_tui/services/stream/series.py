"""One metric over steps as the stream keeps it (``Series``: compact arrays, blocks kept for charts) and as a chart
draws it (``SeriesSnapshot``: blocks of the whole series or of its last steps, which no thread changes).

A series shares the stream's one steps array while it is logged at every metrics event, and keeps its own from
the first step it skips; a value that is not a number (null for NaN, text, true, false) is no point.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass

from grpo_tui.services.stream.buckets import BlockCache
from trainer_core.contract.run.json_values import is_number


class Series:
    """One metric over steps, in compact arrays.

    While a metric is logged at every metrics event (the usual case) it shares the stream's one steps
    array and stores only float32 values: a million points cost 4 MB. A metric that skips a step or logs a
    null gets a steps array of its own from then on.
    """

    __slots__ = ("_steps", "blocks", "shared", "values")

    def __init__(self, typecode: str = "f", shared: array | None = None):
        self.shared = shared
        self._steps: array | None = None if shared is not None else array("l")  # exactly one of the two is set
        self.values = array(typecode)
        self.blocks = BlockCache()

    @property
    def steps(self) -> array:
        steps = self.shared if self._steps is None else self._steps
        assert steps is not None  # a series without shared steps has its own
        return steps

    def _own_steps(self) -> None:
        if self._steps is None:
            self._steps = array("l", self.steps[: len(self.values)])  # the shared steps

    def extend(self, steps: list, values: list, aligned: bool = False, typed: bool = False) -> None:
        """Append a column; entries that are not numbers (null for NaN, strings, true and false) are skipped.

        ``aligned``: the shared steps array already ends with ``steps`` and this series was in step with it.
        ``typed``: the values are numbers or not numbers at all, never true or false (the fast path's records).
        """
        count = len(self.values)
        if not self._take(values, typed):
            pairs = [(s, v) for s, v in zip(steps, values) if is_number(v)]
            steps = [p[0] for p in pairs]
            self.values.fromlist([p[1] for p in pairs])
            aligned = False
        if self._steps is None and not aligned:
            self._steps = array("l", self.steps[:count])  # the shared steps, until now
        if self._steps is not None:
            self._steps.extend(steps)

    def _take(self, values: list, typed: bool) -> bool:
        """Append ``values`` if every one is a number (an array would take true and false as 1 and 0)."""
        if not typed and bool in set(map(type, values)):
            return False
        try:
            self.values.fromlist(values)  # all or nothing: a TypeError leaves the array as it was
        except TypeError:
            return False
        return True

    def settle(self) -> None:
        """After a batch: a shared series that fell behind the shared steps keeps its own from now on."""
        if self._steps is None and len(self.values) != len(self.steps):  # the shared steps
            self._own_steps()

    def __len__(self) -> int:
        return len(self.values)

    def snapshot(self, key: str, buckets: int, window: int | None = None) -> SeriesSnapshot:
        """At least ``buckets`` blocks (fewer than twice as many) of the whole series, or of its last ``window`` steps."""
        n = len(self.values)
        if not n:
            return SeriesSnapshot(key, 0, buckets, window=window)
        steps = self.steps
        first = 0 if window is None else bisect_right(steps, steps[n - 1] - window, 0, n)
        blocks = self.blocks.blocks(self.values, first, buckets)
        size = blocks.size
        xs = tuple(steps[blocks.start : n : size])
        return SeriesSnapshot(
            key, n, buckets, xs, blocks.lows, blocks.highs, self.values[-1], blocks.means, size, steps[n - 1], window
        )


@dataclass(frozen=True)
class SeriesSnapshot:
    """One metric as a chart draws it: blocks of ``size`` consecutive points, each with its min, max and mean.

    ``count`` (and ``len()``) is the number of points in the whole series; ``steps`` holds each block's first
    step and ``end_step`` the series' last. ``window``: the chart shows the last that many steps (None: all).
    """

    key: str
    count: int
    buckets: int
    steps: tuple = ()
    lows: tuple = ()
    highs: tuple = ()
    last_value: float | None = None
    means: tuple = ()
    size: int = 1
    end_step: int | None = None
    window: int | None = None

    def __len__(self) -> int:
        return self.count

    @property
    def last_step(self) -> int | None:
        return self.end_step

    @property
    def exact(self) -> bool:
        """Every point is its own block (lows, highs and means are the values)."""
        return self.size == 1
