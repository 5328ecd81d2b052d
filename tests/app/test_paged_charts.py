"""Every metric the fourth chart pages to (``m``) is drawn from its own values, raw and smoothed.

A chart redraws incrementally: it keeps the dot columns of the blocks it drew and recomputes only the newest.
Paging swaps the metric under the same axes, so nothing kept from the previous metric may survive the swap.
Each drawn series is compared with the run's events (the blocks' minima and maxima) and with the same
snapshot rasterised from scratch.
"""

from __future__ import annotations

import pytest

from grpo_tui.app import make_app
from grpo_tui.widgets import chart_raster as raster
from grpo_tui.widgets.chart_base import CELLS, LABEL_WIDTH
from grpo_tui.widgets.metric_chart import MetricChart
from trainer_core.contract.run.event_log import read_events
from trainer_core.contract.run.events import Metrics

from ..run_fixtures import make_finished_run
from .conftest import wait_until

STEPS = 120


def expected_rows(chart: MetricChart, snap) -> list[str]:
    """The plot's cells for ``snap``, rasterised with nothing kept from an earlier draw."""
    x0, x1 = chart.domain() or (0, 0)
    rows, cells = len(chart.text.splitlines()) - 1, chart.plot_width
    y_min, y_max = raster.y_domain(snap.lows, snap.highs)
    grid = raster.Raster.blank(rows, cells)
    grid.draw(raster.columns(snap.steps, snap.lows, snap.highs, x0, x1, cells * 2), y_min, y_max)
    return ["".join(CELLS[bits] for bits in grid.line[r]) for r in range(rows)]


def drawn_rows(chart: MetricChart) -> list[str]:
    cells = chart.plot_width
    return [line[LABEL_WIDTH + 1 : LABEL_WIDTH + 1 + cells] for line in chart.text.splitlines()[:-1]]


def blocks_of(values: dict[int, float], snap) -> list[tuple[float, float]]:
    ends = [*snap.steps[1:], snap.end_step + 1]
    return [
        (min(v for s, v in values.items() if a <= s < b), max(v for s, v in values.items() if a <= s < b))
        for a, b in zip(snap.steps, ends)
    ]


async def test_each_paged_metric_is_drawn_from_its_own_values_raw_and_smoothed(tmp_path):
    run = make_finished_run(tmp_path / "runs", steps=STEPS, with_warnings=False)
    logged = [e for e in read_events(run / "events.jsonl") if isinstance(e, Metrics)]
    app = make_app(tmp_path / "runs", theme="grpo-dark", start="watch", watch=run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = pilot.app.screen
        grid = screen.grid
        chart = screen.query_one("#chart-extra", MetricChart)
        await wait_until(pilot, lambda: grid.extra_keys and grid.data.get(grid.extra_key) is not None)
        keys = list(grid.extra_keys)
        assert {"loss", "completions/mean_length", "entropy", "grad_norm"} <= set(keys), keys
        for turn in range(len(keys)):
            key = grid.extra_key
            await wait_until(
                pilot,
                lambda key=key: (
                    (snap := grid.data.get(key)) is not None and snap.end_step == STEPS and chart.title.startswith(key)
                ),
                what=f"the fourth chart drawing {key}",
            )
            snap = grid.data[key]
            values = {e.step: float(e.values[key]) for e in logged if isinstance(e.values.get(key), (int, float))}
            expected = [v for block in blocks_of(values, snap) for v in block]
            assert [v for pair in zip(snap.lows, snap.highs) for v in pair] == pytest.approx(expected, rel=1e-5), key
            await wait_until(
                pilot,
                lambda snap=snap: drawn_rows(chart) == expected_rows(chart, snap),
                timeout=10,
                what=f"{key} drawn from its own values",
                show=lambda: chart.text,
            )
            await pilot.press("e")  # smoothed: the raw series stays faint behind the EMA, on the same axes
            await wait_until(pilot, lambda: chart.smooth and any(r.strip() for r in drawn_rows(chart)), what="EMA on")
            await pilot.press("e")
            await wait_until(
                pilot,
                lambda snap=snap: not chart.smooth and drawn_rows(chart) == expected_rows(chart, snap),
                timeout=10,
                what=f"{key} drawn raw again after EMA off",
                show=lambda: chart.text,
            )
            if turn < len(keys) - 1:
                await pilot.press("m")
