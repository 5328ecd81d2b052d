"""Downsampling for charts: kept blocks, extended as a series grows, and the braille raster drawn from them."""

from __future__ import annotations

import random
from array import array

import pytest

from grpo_tui.services.stream.buckets import BlockCache
from grpo_tui.services.stream.folded import Series
from grpo_tui.widgets import chart_raster as raster


def reference(values, start: int, size: int):
    """Min, max, mean per block, computed the obvious way."""
    out = []
    for i in range(start, len(values), size):
        chunk = values[i : i + size]
        out.append((min(chunk), max(chunk), sum(chunk) / len(chunk)))
    return out


def close(a, b) -> bool:
    return all(abs(x - y) <= 1e-4 * max(1.0, abs(y)) for x, y in zip(a, b, strict=True))


def test_a_one_step_spike_survives_a_hundred_thousand_points():
    values = array("f", [0.1] * 100_000)
    values[54_321], values[77_000] = 9.0, -5.0
    blocks = BlockCache().blocks(values, 0, 80)
    assert 80 <= len(blocks) < 160 and blocks.start == 0
    assert max(blocks.highs) == 9.0 and min(blocks.lows) == -5.0
    assert sum(1 for h in blocks.highs if h > 1) == 1, "the spike is in exactly one block"


def test_blocks_kept_while_the_series_grows_match_blocks_computed_afresh():
    rand = random.Random(3)
    values, cache = array("f"), BlockCache()
    for _ in range(300):
        values.extend(rand.gauss(0, 1) for _ in range(rand.randint(1, 700)))
        got = cache.blocks(values, 0, 64)
        fresh = BlockCache().blocks(values, 0, 64)
        assert (got.size, got.start) == (fresh.size, fresh.start)
        want = reference(values, got.start, got.size)
        assert close(got.lows, [w[0] for w in want]) and close(got.highs, [w[1] for w in want])
        assert close(got.means, [w[2] for w in want])
        assert 64 <= len(got) < 130
    assert len(cache.levels) <= 4


def test_a_window_covers_its_last_points_from_an_aligned_block():
    values = array("f", range(10_000))
    blocks = BlockCache().blocks(values, 9_000, 50)
    assert blocks.start <= 9_000 < blocks.start + blocks.size
    assert blocks.highs[-1] == 9_999 and len(blocks) >= 50
    few = BlockCache().blocks(values, 9_990, 50)
    assert few.size == 1 and few.lows == tuple(range(9_990, 10_000))


def test_a_series_snapshot_reports_steps_and_window():
    series = Series(shared=None)
    series.extend(list(range(1, 1001)), [float(i % 7) for i in range(1000)])
    snap = series.snapshot("reward", 40)
    assert snap.steps[0] == 1 and snap.end_step == 1000 and snap.count == 1000
    assert len(snap.steps) == len(snap.lows) == len(snap.highs) == len(snap.means)
    zoomed = series.snapshot("reward", 40, window=100)
    assert zoomed.window == 100 and zoomed.end_step == 1000 and 890 <= zoomed.steps[0] <= 901


def test_columns_join_few_points_and_merge_many():
    spread = raster.columns([1, 10], [0.0, 1.0], [0.0, 1.0], 1, 10, 10)
    assert spread[0] == (0.0, 0.0) and spread[-1] == (1.0, 1.0) and all(c is not None for c in spread)
    merged = raster.columns([1, 2, 3, 4], [0, 5, 1, 1], [0, 9, 1, 1], 1, 4, 2)
    assert merged == [(0, 9), (1, 1)]


def test_domains_are_round_and_stable_while_a_run_grows():
    assert raster.x_domain(1, 37) == (1, 40) and raster.x_domain(1, 230) == (1, 250)
    assert {raster.x_domain(1, last) for last in range(201, 251)} == {(1, 250)}
    assert raster.x_domain(1, 5000, window=2000) == (3001, 5000)
    assert raster.y_domain([0.13, 0.2], [0.5, 0.87]) == (0.0, 1.0)
    assert raster.y_domain([0.312], [0.338]) == pytest.approx((0.31, 0.34))
    lo, hi = raster.y_domain([2.0], [2.0])
    assert lo < 2.0 < hi


def dots_by_hand(spans, rows: int, y_min: float, y_max: float) -> set[tuple[int, int]]:
    """(dot row, dot column) of every dot, one at a time: the raster must set exactly these."""
    bottom = rows * 4 - 1
    out, previous = set(), None
    for c, span in enumerate(spans):
        if span is None:
            previous = None
            continue
        top = min(bottom, max(0, round((y_max - span[1]) * bottom / (y_max - y_min))))
        low = min(bottom, max(0, round((y_max - span[0]) * bottom / (y_max - y_min))))
        here = (top, low)
        if previous is not None:
            if low < previous[0] - 1:
                low = previous[0] - 1
            elif top > previous[1] + 1:
                top = previous[1] + 1
        previous = here
        out |= {(r, c) for r in range(top, low + 1)}
    return out


def test_the_raster_sets_the_dots_a_line_needs():
    rand = random.Random(5)
    for _ in range(50):
        values = [rand.choice([rand.random(), rand.random() * 0.1]) for _ in range(40)]
        spans = [None if rand.random() < 0.05 else (v, v + rand.random() * 0.2) for v in values]
        grid = raster.Raster.blank(5, 20)
        grid.draw(spans, 0.0, 1.2)
        got = {(r, c) for r in range(20) for c in range(40) if grid.line[r // 4][c // 2] & raster.DOTS[r % 4][c % 2]}
        assert got == dots_by_hand(spans, 5, 0.0, 1.2)


def test_the_raster_draws_a_spike_as_a_full_stroke():
    lows = [0.0] * 40
    lows[20] = 1.0
    grid = raster.Raster.blank(3, 20)
    grid.draw(raster.columns(list(range(1, 41)), lows, lows, 1, 40, 40), 0.0, 1.0)
    assert all(grid.line[r][10] for r in range(3)), "the spike's cell column has dots in every row"
    assert not any(grid.line[0][x] for x in (0, 5, 15)), "the flat line stays at the bottom"
    grid.mark(4)
    assert 2 in grid.marker and all(grid.line[r][2] & raster.FULL_COLUMN[0] == raster.FULL_COLUMN[0] for r in range(3))


def test_ema_is_debiased_and_smooths():
    smooth = raster.ema([1.0, 1.0, 1.0])
    assert all(abs(v - 1.0) < 1e-9 for v in smooth)
    noisy = raster.ema([0.0, 1.0] * 50)
    assert max(noisy[20:]) - min(noisy[20:]) < 0.2


@pytest.mark.parametrize("dots", [40, 97])
def test_columns_computed_again_from_the_last_kept_block_match_columns_computed_afresh(dots):
    rand = random.Random(dots)
    series, kept, reused = Series(), None, 0
    for step in range(1, 3000):
        series.extend([step], [rand.gauss(0.5, 0.2) + (3.0 if step % 911 == 0 else 0.0)])
        snap = series.snapshot("reward", dots)
        x0, x1 = raster.x_domain(snap.steps[0], snap.end_step)
        key = (x0, x1, snap.size, snap.steps[0])
        fresh = raster.columns(snap.steps, snap.lows, snap.highs, x0, x1, dots)
        if kept is not None and kept[0] == key:
            again = raster.columns(snap.steps, snap.lows, snap.highs, x0, x1, dots, kept[2], kept[1] - 1)
            assert again == fresh, f"step {step}"
            reused += 1
        kept = (key, len(snap.steps), fresh)
    assert reused > 2000, "most steps kept their axes and blocks"
