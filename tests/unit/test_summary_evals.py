"""A finished run's summary holds its held-out figures, and the runs list takes them from there.

Listing thousands of finished runs must not open their events: the figures a run's ``eval`` events give
(baseline, latest and best of the ranking metric) are computed once at its end and stored in the state's
``summary``; a run whose summary lacks them (written before summaries held them) or holds a record that is not
figures is still scanned, and every route gives the same row.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import grpo_tui.services.catalog.folders as catalog
from grpo_tui.services.catalog.folders import list_runs, run_info
from grpo_tui.services.records.run_row import EvalFigures
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.ledger import default_metric, evals_by_step
from trainer_core.contract.run.ranking import ranking_metric
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import EVAL_KEY, eval_figures, summarize

from ..run_fixtures import TASK_METRIC, eval_at, make_eval_run, make_finished_run
from .test_catalog import IDS, emit, emit_steps, make_run

FIGURES = {
    "metric": TASK_METRIC,
    "baseline": {"step": 0, "value": 0.3},
    "latest": {"step": 50, "value": 0.1},
    "best": {"step": 20, "value": 0.7},
}


def summarised(path: Path) -> dict:
    """Store the summary ``RunFolder.record_end`` would have stored in a fixture's state.json; return it."""
    folder = RunFolder(path)
    state = folder.read_state()
    state["summary"] = summarize(folder, state["status"], state)
    folder.state_file.write_text(json.dumps(state, indent=2) + "\n")
    return state["summary"]


def edit_summary(path: Path, **changes) -> None:
    state = json.loads((path / "state.json").read_text())
    state["summary"].update(changes)
    for key in [k for k, v in changes.items() if v is ...]:
        del state["summary"][key]
    (path / "state.json").write_text(json.dumps(state) + "\n")


def blank_events(path: Path) -> None:
    """events.jsonl kept at its size (the summary stays valid) but with no event left in it."""
    events = path / "events.jsonl"
    events.write_bytes(b"\n" * events.stat().st_size)


@pytest.fixture
def scans(monkeypatch) -> list[str]:
    """The events files the catalog scans for evals while the test runs."""
    scanned: list[str] = []
    real = catalog.held_out_evals

    def spy(path):
        scanned.append(str(path))
        return real(path)

    monkeypatch.setattr(catalog, "held_out_evals", spy)
    catalog._eval_cache.clear()
    return scanned


# -- the summary ------------------------------------------------------------------------------------------


def test_the_summary_holds_the_figures_the_events_give(runs_dir):
    path = make_eval_run(runs_dir)
    listed = run_info(RunFolder(path)).to_wire()["eval"]  # no summary yet: from the events
    assert summarised(path)[EVAL_KEY] == FIGURES == listed


def test_a_run_ended_through_record_end_stores_its_figures(runs_dir):
    folder = make_run(runs_dir, IDS[0], "running", max_steps=50)
    emit(folder, eval_at(0, 50))
    for step in (10, 20):
        emit_steps(folder, range(step - 9, step + 1))
        emit(folder, eval_at(step, 50))
    folder.record_end(Status.STOPPED, "stop file: grpo-tui stop", 20)
    assert folder.read_state()["summary"][EVAL_KEY] == {
        "metric": TASK_METRIC,
        "baseline": {"step": 0, "value": 0.3},
        "latest": {"step": 20, "value": 0.7},
        "best": {"step": 20, "value": 0.7},
    }


def test_a_run_without_evals_stores_none(runs_dir):
    path = make_finished_run(runs_dir, steps=10, with_warnings=False)
    summary = summarised(path)
    assert EVAL_KEY in summary and summary[EVAL_KEY] is None


def test_the_ranking_metric_is_the_ledgers(runs_dir):
    path = make_eval_run(runs_dir)
    config = path / "config.yaml"
    plain = config.read_text()
    evals = evals_by_step(path / "events.jsonl")
    for keep_best in (None, "reward", "reward:2", f" {TASK_METRIC}:1 ", "reward:0", "reward:x", ":2", ""):
        config.write_text(plain + ("" if keep_best is None else f"keep_best: {json.dumps(keep_best)}\n"))
        assert ranking_metric(keep_best, evals) == default_metric(path, evals), keep_best
    assert ranking_metric("reward", {}) == "reward" and ranking_metric(None, {}) is None


def test_the_summary_follows_keep_best(runs_dir):
    path = make_eval_run(runs_dir)
    config = path / "config.yaml"
    config.write_text(config.read_text() + "keep_best: reward:2\n")
    figures = summarised(path)[EVAL_KEY]
    assert figures["metric"] == "reward" and figures["best"] == {"step": 50, "value": 0.9}


def test_figures_without_a_value_or_a_baseline():
    evals = {10: eval_at(10, 50), 20: eval_at(20, 50)}
    assert eval_figures(evals, "nothing") == {
        "metric": "nothing",
        "baseline": None,
        "latest": {"step": 20, "value": None},
        "best": None,
    }
    assert eval_figures({}, "reward") is None and eval_figures(evals, None) is None


# -- the catalog reads them from the summary ------------------------------------------------------------------


def test_a_summarised_run_is_listed_without_scanning_its_events(runs_dir, scans):
    path = make_eval_run(runs_dir)
    summarised(path)
    blank_events(path)  # a scan now would find no eval
    (row,) = list_runs(runs_dir)
    assert row.to_wire()["eval"] == FIGURES
    assert scans == []


def test_a_summarised_run_without_evals_is_not_scanned_either(runs_dir, scans):
    summarised(make_finished_run(runs_dir, steps=10, with_warnings=False))
    (row,) = list_runs(runs_dir)
    assert row.held_out is None and scans == []


def test_a_summary_written_before_it_held_figures_still_scans(runs_dir, scans):
    path = make_eval_run(runs_dir)
    summarised(path)
    edit_summary(path, **{EVAL_KEY: ...})
    (row,) = list_runs(runs_dir)
    assert row.to_wire()["eval"] == FIGURES
    assert scans == [str(path / "events.jsonl")]


@pytest.mark.parametrize(
    "record",
    [
        "best",
        {"metric": 3},
        {"metric": ""},
        {**FIGURES, "best": {"step": -1, "value": 0.7}},
        {**FIGURES, "latest": {"step": 50, "value": "0.1"}},
        {**FIGURES, "baseline": {"step": True, "value": 0.3}},
        {**FIGURES, "best": [20, 0.7]},
    ],
)
def test_a_summary_whose_figures_are_not_figures_is_scanned(runs_dir, scans, record):
    path = make_eval_run(runs_dir)
    summarised(path)
    edit_summary(path, **{EVAL_KEY: record})
    assert EvalFigures.from_record(record) is None
    (row,) = list_runs(runs_dir)
    assert row.to_wire()["eval"] == FIGURES and len(scans) == 1


def test_the_rows_are_the_same_with_and_without_summaries(runs_dir):
    make_eval_run(runs_dir, "20260101-000000-e7a1ed")
    make_finished_run(runs_dir, "20251231-000000-abcdef", steps=10, with_warnings=False)
    from_files = [r.to_wire() for r in list_runs(runs_dir)]
    for path in runs_dir.iterdir():
        summarised(path)
    catalog._eval_cache.clear()
    assert [r.to_wire() for r in list_runs(runs_dir)] == from_files
