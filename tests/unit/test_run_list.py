"""A runs list that scales: the summary a run's end stores, listing from it, and the app's incremental refresh.

A finished run's row must come from its state.json alone (no events scan, no YAML, no process lookup), and
be the same row the files give; a run without a summary, or with a stale one, lists as before; the app's
``RunList`` reads a run again only when its files changed.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import shutil
from pathlib import Path

import pytest

import trainer_core.contract.run.summary as run_summary
from grpo_tui.cli import main as cli_main
from grpo_tui.services.catalog.folders import list_runs, run_info
from grpo_tui.services.catalog.listing import RunList
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import Error, Metrics
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import summarize, valid_summary

from ..run_fixtures import make_three_runs
from .test_catalog import IDS, emit, emit_steps, make_run, warning


def rows(runs_dir: Path) -> list[dict]:
    return [r.to_wire() for r in list_runs(runs_dir)]


def strip_summaries(runs_dir: Path) -> None:
    for state_file in runs_dir.glob("*/state.json"):
        state = json.loads(state_file.read_text())
        state.pop("summary", None)
        state_file.write_text(json.dumps(state, indent=2) + "\n")


def add_summaries(runs_dir: Path) -> None:
    """What ``record_end`` would have stored, for run folders written by hand (the fixtures)."""
    for state_file in runs_dir.glob("*/state.json"):
        folder = RunFolder(state_file.parent)
        state = folder.read_state()
        state["summary"] = summarize(folder, state["status"], state)
        state_file.write_text(json.dumps(state, indent=2) + "\n")


@pytest.fixture
def opened(monkeypatch):
    """The names of the files opened while the test runs (``open`` and ``Path.read_*``)."""
    names: list[str] = []
    real = builtins.open

    def spy(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)):
            names.append(os.path.basename(os.fspath(file)))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    return names


def ended_run(runs_dir: Path, run_id: str, status: Status, *events, steps: int = 5) -> RunFolder:
    """A run that logged ``steps`` steps and ``events`` and ended through ``record_end``, as every run ends."""
    folder = make_run(runs_dir, run_id, "running", max_steps=40)
    emit_steps(folder, range(1, steps + 1))
    emit(folder, *events)
    folder.record_end(status, None if status is Status.COMPLETED else f"{status} for a reason", steps)
    return folder


# -- the summary a run's end stores -----------------------------------------------------------------------


def test_record_end_stores_the_rows_fields_in_the_state(runs_dir):
    folder = ended_run(
        runs_dir,
        IDS[0],
        Status.COMPLETED,
        warning("reward_flat", Severity.WARN, 4),
        warning("fyi", Severity.INFO, 5),
        warning("kl_explosion", Severity.CRITICAL, 5),
    )
    state = folder.read_state()
    summary = state["summary"]
    assert summary["ended"] == state["ended"] and summary["events_size"] == folder.events_file.stat().st_size
    assert (summary["step"], summary["reward"], summary["total"]) == (5, 0.5, 40)
    assert (summary["warnings"], summary["last_warning"]) == (2, "kl_explosion")
    assert (summary["project"], summary["model"]) == ("demo", "org/Qwen2.5-0.5B-Instruct")
    assert summary["crash"] is None and summary["duration"] == round(state["ended"] - state["started"], 3)
    assert valid_summary(state, folder.events_file.stat().st_size) == summary


def test_a_failed_runs_summary_holds_the_watchers_crash_verdict(runs_dir):
    folder = make_run(runs_dir, IDS[0], "running")
    emit_steps(folder, range(1, 3))
    folder.log_file.write_text("step 2\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    emit(folder, Error(kind="exception", message="OutOfMemoryError: CUDA out of memory", step=2))
    folder.record_end(Status.FAILED, "OutOfMemoryError", 2)
    crash = folder.read_state()["summary"]["crash"]
    assert crash["rule"] == "crash_oom" and crash["severity"] == "critical" and "log_line" in crash["evidence"]
    listed = rows(runs_dir)
    strip_summaries(runs_dir)
    assert listed == rows(runs_dir)
    assert [a["rule"] for a in listed[0]["alerts"]] == ["crash_oom"] and listed[0]["last_warning"] == "crash_oom"


def test_a_summary_that_fails_never_stops_the_end_from_being_recorded(runs_dir, monkeypatch):
    folder = make_run(runs_dir, IDS[0], "running")

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(run_summary, "summarize", broken)
    folder.record_end(Status.STOPPED, "user", 0)
    state = folder.read_state()
    assert state["status"] == "stopped" and state["summary"] is None
    assert run_info(folder).status is Status.STOPPED


# -- listing from summaries -------------------------------------------------------------------------------


def test_a_summarised_run_lists_from_its_state_alone_and_the_same_as_from_its_files(runs_dir, opened):
    ended_run(runs_dir, IDS[0], Status.COMPLETED, warning("reward_flat", Severity.WARN, 4))
    ended_run(runs_dir, IDS[1], Status.STOPPED)
    ended_run(runs_dir, IDS[2], Status.FAILED, Error(kind="environment", message="KeyError: 'answer'", step=5))
    opened.clear()
    listed = rows(runs_dir)
    assert sorted(set(opened)) == ["state.json"] and len(opened) == 3
    strip_summaries(runs_dir)
    opened.clear()
    assert rows(runs_dir) == listed
    assert {"events.jsonl", "config.yaml"} <= set(opened)  # the fallback reads the files
    assert [r["status"] for r in listed] == ["failed", "stopped", "completed"]
    assert listed[0]["alerts"][0]["rule"] == "crash_environment"


def test_the_fixture_runs_list_the_same_with_summaries_and_without(tmp_path, capsys):
    runs_dir = tmp_path / "runs"
    make_three_runs(runs_dir)
    before = rows(runs_dir)
    assert cli_main(["runs", "--json", "--runs-dir", str(runs_dir)]) == 0
    printed = capsys.readouterr().out
    assert printed == json.dumps(before, indent=2) + "\n"  # the JSON json.dumps printed, byte for byte
    add_summaries(runs_dir)
    assert all(
        valid_summary(json.loads(p.read_text()), (p.parent / "events.jsonl").stat().st_size)
        for p in runs_dir.glob("*/state.json")
    )
    for name in ("config.yaml", "trainer.log"):  # a summarised row needs neither
        for path in runs_dir.glob(f"*/{name}"):
            path.unlink()
    assert rows(runs_dir) == before
    assert cli_main(["runs", "--json", "--runs-dir", str(runs_dir)]) == 0
    assert capsys.readouterr().out == printed


def test_a_stale_summary_is_not_believed(runs_dir):
    appended = ended_run(runs_dir, IDS[0], Status.COMPLETED)
    emit_steps(appended, range(6, 8))  # events after the end: the summary no longer describes the file
    assert run_info(appended).step == 7
    resumed = ended_run(runs_dir, IDS[1], Status.STOPPED)
    resumed.write_state(status=Status.STARTING, ended=None, exit_reason=None)  # a resume, then lost
    resumed.write_state(status=Status.FAILED, exit_reason="lost")
    state = resumed.read_state()
    assert "summary" in state and valid_summary(state, resumed.events_file.stat().st_size) is None
    assert run_info(resumed).ended is None and run_info(resumed).step == 5


# -- the app's incremental refresh ------------------------------------------------------------------------


def test_a_refresh_reads_again_only_the_runs_that_changed(runs_dir):
    summarised = ended_run(runs_dir, IDS[0], Status.COMPLETED)
    old = make_run(runs_dir, IDS[1], "stopped")  # no summary: listed from its files
    emit_steps(old, range(1, 4))
    live = make_run(runs_dir, IDS[2], "running")  # this process: live
    emit_steps(live, range(1, 3))
    runs = RunList(runs_dir)
    first = runs.refresh()
    assert [r.run_id for r in first.runs] == [IDS[2], IDS[1], IDS[0]]
    assert first.changed == {IDS[0], IDS[1], IDS[2]} and runs.reads == 3

    second = runs.refresh()
    assert runs.reads == 4  # the live run alone, every time
    assert second.runs[1] is first.runs[1] and second.runs[2] is first.runs[2]

    emit_steps(old, range(4, 6))
    emit_steps(live, range(3, 4))
    third = runs.refresh()
    assert runs.reads == 6 and third.changed == {IDS[1], IDS[2]}
    assert (third.runs[1].step, third.runs[0].step) == (5, 3)

    summarised.write_state(exit_reason="edited")  # a summarised run: its state changed
    fourth = runs.refresh()
    assert runs.reads == 8 and fourth.changed == {IDS[0], IDS[2]} and fourth.runs[2].exit_reason == "edited"

    make_run(runs_dir, IDS[3], "completed")
    shutil.rmtree(old.path)
    fifth = runs.refresh()
    assert fifth.changed == {IDS[3], IDS[2]} and fifth.removed == {IDS[1]}
    assert [r.run_id for r in fifth.runs] == [IDS[3], IDS[2], IDS[0]]


def test_a_refresh_with_nothing_changed_reports_nothing(runs_dir):
    for run_id in IDS:
        ended_run(runs_dir, run_id, Status.COMPLETED)
    (runs_dir / "not-a-run").mkdir()
    runs = RunList(runs_dir)
    assert len(runs.refresh().runs) == len(IDS)
    update = runs.refresh()
    assert not update and runs.reads == len(IDS) and len(update.runs) == len(IDS)
    with EventWriter(runs_dir / "not-a-run" / "events.jsonl") as writer:  # it becomes one
        writer.emit(Metrics(step=1, values={"reward": 1.0}))
    update = runs.refresh()
    assert update.changed == {"not-a-run"} and update.runs[0].status is Status.STARTING  # no state yet: just made


def test_finished_runs_can_be_checked_every_few_refreshes(runs_dir):
    for run_id in IDS:
        ended_run(runs_dir, run_id, Status.COMPLETED)
    runs = RunList(runs_dir, stable_every=3)
    runs.refresh()
    edited = RunFolder(runs_dir / IDS[0])
    edited.write_state(exit_reason="edited")
    seen = [bool(runs.refresh()) for _ in range(3)]
    assert seen.count(True) == 1 and runs.reads == len(IDS) + 1  # within 3 refreshes, read once
    edited.write_state(exit_reason="again")
    assert runs.refresh(full=True).changed == {IDS[0]}
