"""A host's ``runs --json`` rows carry the held-out figures (``eval``), checked where they arrive: a run on a host is
listed with the same figures as here, and a hostile host's wrong types are refused with the field named."""

from __future__ import annotations

import json

import pytest

from grpo_tui.services.catalog.folders import list_runs
from grpo_tui.services.records.run_row import EvalFigures, EvalPoint, RunInfo
from grpo_tui.services.records.wire import WireError, parse_run_rows
from tests.standins.hostile_host import rows

from ..run_fixtures import TASK_METRIC, make_eval_run, make_finished_run

FIGURES = {
    "metric": TASK_METRIC,
    "baseline": {"step": 0, "value": 0.3},
    "latest": {"step": 50, "value": 0.1},
    "best": {"step": 20, "value": 0.7},
}


def row(**changes) -> dict:
    """The hostile host's good row, with ``changes``."""
    return {**rows("/runs")[7], **changes}


def test_a_hosts_rows_carry_the_figures_it_listed(runs_dir):
    make_eval_run(runs_dir, "20260101-000000-e7a1ed")
    make_finished_run(runs_dir, "20251231-000000-abcdef", steps=10, with_warnings=False)
    sent = [r.to_wire() for r in list_runs(runs_dir)]  # what `grpo-tui runs --json` prints on the host
    received, problems = parse_run_rows(json.loads(json.dumps(sent)))
    assert problems == []
    assert [r.to_wire() for r in received] == sent
    assert received[0].held_out == EvalFigures(TASK_METRIC, EvalPoint(0, 0.3), EvalPoint(50, 0.1), EvalPoint(20, 0.7))
    assert received[1].held_out is None


def test_a_row_without_figures_has_none():
    assert RunInfo.from_wire(row()).held_out is None  # a host older than the figures sends no `eval`
    assert RunInfo.from_wire(row(eval=None)).held_out is None


def test_points_may_be_null_and_values_null_or_whole():
    figures = RunInfo.from_wire(
        row(eval={"metric": "reward", "baseline": None, "latest": {"step": 7, "value": None}, "best": None})
    ).held_out
    assert figures == EvalFigures("reward", None, EvalPoint(7, None), None)
    whole = RunInfo.from_wire(row(eval={**FIGURES, "best": {"step": 20, "value": 1}})).held_out
    assert whole is not None and whole.best == EvalPoint(20, 1)


@pytest.mark.parametrize(
    "value, where",
    [
        ("0.7", "eval: expected a JSON object"),
        ([FIGURES], "eval: expected a JSON object"),
        ({**FIGURES, "metric": None}, "eval.metric: expected a string"),
        ({**FIGURES, "metric": 3}, "eval.metric: expected a string"),
        ({**FIGURES, "metric": ""}, "eval.metric: expected a metric's name"),
        ({**FIGURES, "metric": "m" * 70000}, "eval.metric: expected a string"),
        ({**FIGURES, "baseline": 0.3}, "eval.baseline: expected a JSON object"),
        ({**FIGURES, "latest": [50, 0.1]}, "eval.latest: expected a JSON object"),
        ({**FIGURES, "best": {"step": -1, "value": 0.7}}, "eval.best.step: expected a whole number"),
        ({**FIGURES, "best": {"step": 1.5, "value": 0.7}}, "eval.best.step: expected a whole number"),
        ({**FIGURES, "best": {"step": True, "value": 0.7}}, "eval.best.step: expected a whole number"),
        ({**FIGURES, "best": {"value": 0.7}}, "eval.best.step: expected a whole number"),
        ({**FIGURES, "latest": {"step": 50, "value": "0.1"}}, "eval.latest.value: expected a finite number"),
        ({**FIGURES, "latest": {"step": 50, "value": float("nan")}}, "eval.latest.value: expected a finite number"),
        ({**FIGURES, "baseline": {"step": 0, "value": float("inf")}}, "eval.baseline.value: expected a finite"),
        ({**FIGURES, "baseline": {"step": 0, "value": False}}, "eval.baseline.value: expected a finite number"),
    ],
)
def test_figures_of_the_wrong_kind_are_named(value, where):
    with pytest.raises(WireError) as failed:
        RunInfo.from_wire(row(eval=value))
    assert str(failed.value).startswith(where)
    assert len(str(failed.value)) < 300  # the value is shown cut short


def test_a_reply_keeps_its_good_rows_and_names_the_one_with_bad_figures():
    good, problems = parse_run_rows(
        [
            row(run_id="fine", eval=FIGURES),
            row(run_id="lying", eval={**FIGURES, "best": {"step": "20", "value": 0.7}}),
        ]
    )
    assert [r.run_id for r in good] == ["fine"] and good[0].held_out is not None
    assert problems == ["row 2: eval.best.step: expected a whole number from 0 to 1099511627776, got '20'"]
