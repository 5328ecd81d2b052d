"""Min, max and mean of a growing series in aligned blocks, kept between redraws.

A chart redraws each time a step arrives, so downsampling must not cost a pass over the whole series
every time: at a million points that pass is what made charts slow. Blocks here have a power-of-two size
and start at multiples of it, so a block, once complete, never changes. A ``Level`` keeps the complete
blocks of one size and only computes the ones that completed since the last call; a level twice as
coarse is made by merging pairs of the finer one. The last, partial block is computed each time (it holds
fewer points than a block). Each block keeps its minimum and maximum, so a one-step spike always shows,
and its mean, which smoothing uses.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from dataclasses import dataclass

MAX_LEVELS = 4  # block sizes kept per series (a zoom or a resize asks for another)


@dataclass(frozen=True)
class Blocks:
    """Consecutive blocks of ``size`` points, the first starting at point ``start`` of the series."""

    size: int
    start: int
    lows: tuple
    highs: tuple
    means: tuple

    def __len__(self) -> int:
        return len(self.lows)


class Level:
    """The complete blocks of one size from block ``first`` on, extended as the series grows."""

    __slots__ = ("first", "highs", "lows", "size", "sums")

    def __init__(self, size: int, first: int):
        self.size, self.first = size, first
        self.lows, self.highs, self.sums = array("f"), array("f"), array("d")

    @property
    def end(self) -> int:
        """The block index after the last complete one held."""
        return self.first + len(self.lows)

    def extend(self, values, finer: Level | None = None) -> None:
        """Add the blocks of ``values`` completed since the last call (from ``finer``'s pairs when it has them)."""
        size, end, stop = self.size, self.end, len(values) // self.size
        if end >= stop:
            return
        if finer is not None and finer.size * 2 == size and finer.first <= 2 * end and finer.end >= 2 * stop:
            lo, hi, sm = finer.lows, finer.highs, finer.sums
            for b in range(end, stop):
                i = 2 * b - finer.first
                self.lows.append(min(lo[i], lo[i + 1]))
                self.highs.append(max(hi[i], hi[i + 1]))
                self.sums.append(sm[i] + sm[i + 1])
            return
        for b in range(end, stop):
            chunk = values[b * size : (b + 1) * size]
            self.lows.append(min(chunk))
            self.highs.append(max(chunk))
            self.sums.append(sum(chunk))


class BlockCache:
    """The levels of one series; ``blocks()`` answers a chart from them in time proportional to its width."""

    __slots__ = ("levels",)

    def __init__(self):
        self.levels: OrderedDict[int, Level] = OrderedDict()

    def blocks(self, values, first: int, columns: int) -> Blocks:
        """Points ``first`` to the end of ``values`` in at least ``columns`` blocks (fewer only when there are
        fewer points) and fewer than twice as many; the first block may start up to one block before ``first``."""
        n = len(values)
        first = min(max(first, 0), n)
        span = n - first
        if span <= columns:
            raw = tuple(values[first:])
            return Blocks(1, first, raw, raw, raw)
        size = 1
        while span // (size * 2) >= columns:
            size *= 2
        start_block = first // size
        level = self._level(values, size, start_block)
        i = start_block - level.first
        lows, highs = list(level.lows[i:]), list(level.highs[i:])
        means = [s / size for s in level.sums[i:]]
        tail = values[level.end * size :]
        if len(tail):
            lows.append(min(tail))
            highs.append(max(tail))
            means.append(sum(tail) / len(tail))
        return Blocks(size, start_block * size, tuple(lows), tuple(highs), tuple(means))

    def _level(self, values, size: int, start_block: int) -> Level:
        level = self.levels.get(size)
        if level is None or level.first > start_block:
            finer = self.levels.get(size // 2)
            level = Level(size, start_block if finer is None else min(start_block, finer.first // 2))
            self.levels[size] = level
            while len(self.levels) > MAX_LEVELS:
                self.levels.popitem(last=False)
        self.levels.move_to_end(size)
        finer = self.levels.get(size // 2)
        level.extend(values, finer)
        return level
