"""The held-out evaluation in the lists: the runs table's held-out column and the compare screen's overlay.

A run with evals shows its best held-out value of its ranking metric in the runs list (blank for a run
without); on the compare screen, ``e`` turns the fourth chart to each run's eval series of a held-out metric
and ``m`` pages through the held-out metrics, ``e`` again back to the training metrics.
"""

from __future__ import annotations

from grpo_tui.app import make_app
from grpo_tui.screens.compare import HELD_OUT
from grpo_tui.widgets.overlay_chart import OverlayChart
from grpo_tui.widgets.runs_table import RunsTable

from ..run_fixtures import TASK_METRIC, make_eval_run, make_finished_run
from .conftest import wait_until
from .test_compare_screen import SIZE, open_compare

EVAL_RUN = "20260101-000000-e7a1ed"
PLAIN_RUN = "20251231-000000-abcdef"


def _runs(tmp_path):
    runs = tmp_path / "runs"
    make_eval_run(runs, EVAL_RUN)
    make_eval_run(runs, "20260102-000000-e7a1ee", steps=30)
    make_finished_run(runs, PLAIN_RUN, steps=20, with_warnings=False)
    return runs


async def test_the_runs_list_shows_the_best_held_out_value(tmp_path):
    app = make_app(_runs(tmp_path), theme="grpo-dark")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(getattr(app.screen, "runs", [])) == 3, what="three runs listed")
        table = app.screen.query_one(RunsTable)
        await wait_until(pilot, lambda: table.shown == 3, what="three rows")
        assert str(table.columns[next(k for k in table.columns if k.value == "held_out")].label) == "held-out"
        assert table.get_cell(EVAL_RUN, "held_out") == "0.700"  # the task metric's peak, not its last value
        assert table.get_cell(PLAIN_RUN, "held_out") == ""


async def test_compare_overlays_each_runs_held_out_series(tmp_path):
    app = make_app(_runs(tmp_path), theme="grpo-dark")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_compare(pilot)
        extra = screen.query_one("#chart-extra", OverlayChart)
        assert not extra.key.startswith(HELD_OUT)

        await pilot.press("v")  # the key that means held-out evals on the monitor too
        await wait_until(pilot, lambda: extra.key == HELD_OUT + TASK_METRIC and len(extra.drawn) == 2)
        assert "v: training" in extra.title
        by_end = {s.end_step or 0: s for s in extra.drawn}
        assert sorted(by_end) == [30, 50]
        assert by_end[50].steps == (0, 10, 20, 30, 40, 50)  # one point per eval, the baseline included
        assert max(by_end[50].means) == 0.7 and by_end[50].means[0] == 0.3

        await pilot.press("m")  # the next held-out metric
        await wait_until(pilot, lambda: extra.key == HELD_OUT + "reward" and len(extra.drawn) == 2)

        await pilot.press("v")  # back to training metrics
        await wait_until(pilot, lambda: not extra.key.startswith(HELD_OUT) and "v: held-out" in extra.title)
