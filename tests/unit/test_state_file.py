"""The one reader of state.json (``trainer_core.contract.run.state``): whatever a file holds, every reader gets
typed fields or a named error, never a traceback, and the runs list, the live status and ``grpo-tui stop``
carry on with what is usable."""

from __future__ import annotations

import json
import math
import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trainer_core.contract.run.slurm_job as slurm_job
from grpo_tui.cli import main
from grpo_tui.executors.base import RunAt, judge_stop
from grpo_tui.executors.local import LocalExecutor
from grpo_tui.services.catalog.folders import list_runs, run_info, run_states
from grpo_tui.services.catalog.listing import RunList
from grpo_tui.services.catalog.status import live_status
from grpo_tui.services.records.wire import WireError, parse_mirror_message
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.state import FIELDS, RunState, StateError, parse_state, read_state, read_stop_reason
from trainer_core.contract.run.status import Status
from trainer_core.training.stopping import StopController

from .test_catalog import IDS, make_run

NOT_AN_OBJECT = [
    (b"[]", "it holds a list ([]), not a JSON object"),
    (b'"running"', "it holds a string ('running'), not a JSON object"),
    (b"null", "it holds null (None), not a JSON object"),
    (b"5", "it holds a number (5), not a JSON object"),
    (b'{"status": "runn', "it is not valid JSON (torn, cut short or edited: 16 bytes)"),
    (b"", "it is not valid JSON (torn, cut short or edited: 0 bytes)"),
    (b'{"host": "\xff\xfe"}', "it is not UTF-8 text"),
]


def write(folder: RunFolder, data: bytes) -> None:
    folder.state_file.write_bytes(data)


@pytest.mark.parametrize("data, why", NOT_AN_OBJECT)
def test_a_file_that_is_not_one_json_object_reads_as_empty_with_an_error_naming_the_file(tmp_path, data, why):
    path = tmp_path / "state.json"
    path.write_bytes(data)
    state = read_state(path)
    assert state == {} and isinstance(state, RunState) and not state.missing and state.status is None
    (problem,) = state.problems
    assert isinstance(problem, StateError) and problem.path == str(path) and problem.field is None
    assert str(problem).startswith(f"{path}: {why}; the run is read as if it had none")
    with pytest.raises(StateError, match="not"):
        parse_state(data, path)


def test_a_missing_file_is_an_empty_state_without_a_problem(tmp_path):
    state = read_state(tmp_path / "state.json")
    assert state == {} and state.missing and state.problems == ()


def test_a_field_of_the_wrong_type_is_left_out_and_named_and_the_rest_is_kept(tmp_path):
    path = tmp_path / "state.json"
    bad = {"status": 5, "pid": "abc", "started": "x", "last_step": "x", "restarts": [1], "slurm_end_time": True}
    path.write_text(json.dumps({"run_id": "r1", "root_pid": 0, "ended": None, "future_key": [1, 2], **bad}))
    state = read_state(path)
    assert state == {"run_id": "r1", "ended": None, "future_key": [1, 2]}  # a newer version's key passes through
    named = {p.field: str(p) for p in state.problems}
    assert set(named) == {*bad, "root_pid"}
    assert named["pid"] == f"{path}: pid: 'abc' is not a process id (a whole number above 0); it is read as absent"
    assert named["status"] == f"{path}: status: 5 is not a string; it is read as absent"
    assert "slurm_end_time: True is not a finite number" in named["slurm_end_time"]


def test_a_valid_file_reads_as_written(tmp_path):
    folder = make_run(tmp_path, IDS[0], Status.COMPLETED)
    written = json.loads(folder.state_file.read_text())
    state = folder.read_state()
    assert state == written and state.problems == () and state.status is Status.COMPLETED
    assert set(written) <= FIELDS.keys()  # every key a writer writes is one the reader knows


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(sorted(FIELDS)), inner),
            max_leaves=12,
        ).map(lambda v: json.dumps(v).encode()),
    )
)
def test_anything_in_the_file_reads_without_an_exception_and_every_known_field_has_its_type(data):
    try:
        state = parse_state(data)
    except StateError:
        return
    for key, value in state.items():
        if key in FIELDS and value is not None:
            check = {
                "whole": lambda v: type(v) is int,
                "pid": lambda v: type(v) is int and v > 0,
                "number": lambda v: type(v) in (int, float) and math.isfinite(v),
                "text": lambda v: type(v) is str,
                "object": lambda v: type(v) is dict,
                "list": lambda v: type(v) is list,
                "job": lambda v: type(v) in (str, int),
            }[FIELDS[key]]
            assert check(value), (key, value)


# -- the callers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"[]", b'"x"', b"null", b'{"status": 5, "pid": "abc", "root_pid": "abc"}'])
def test_the_catalog_and_the_live_status_list_a_run_whose_state_is_bad(runs_dir, data):
    folder = make_run(runs_dir, IDS[0], Status.RUNNING)
    write(folder, data)
    assert live_status(folder) is Status.STARTING  # no status, a fresh folder: its trainer may not have written
    old = time.time() - 3600
    os.utime(folder.path, (old, old))
    assert live_status(folder) is Status.LOST
    (row,) = list_runs(runs_dir)
    assert row.run_id == folder.run_id and row.status is Status.LOST and row.started is None
    assert run_info(folder).status is Status.LOST and [f.run_id for f, _ in run_states(runs_dir)] == [folder.run_id]
    assert [r.status for r in RunList(runs_dir).refresh().runs] == [Status.LOST]


def test_writing_over_a_bad_state_keeps_the_changes_and_drops_what_was_unusable(runs_dir):
    folder = make_run(runs_dir, IDS[0], Status.RUNNING)
    write(folder, b"[]")
    folder.write_state(status=Status.STOPPED, exit_reason="by hand")
    state = json.loads(folder.state_file.read_text())
    assert state["status"] == "stopped" and state["exit_reason"] == "by hand" and folder.status() is Status.STOPPED
    write(folder, json.dumps({"status": "running", "pid": "abc", "started": 5}).encode())
    folder.write_state(last_step=2)
    assert "pid" not in json.loads(folder.state_file.read_text()) and folder.read_state()["started"] == 5


@pytest.mark.parametrize("data", [b"[]", b'{"root_pid": "abc", "pid": -3, "slurm_job_id": ["--me"]}'])
def test_stopping_a_run_whose_state_is_bad_says_so_and_is_not_a_traceback(runs_dir, data, capsys):
    folder = make_run(runs_dir, IDS[0], Status.RUNNING)
    write(folder, data)
    outcome = LocalExecutor(runs_dir).stop(RunAt(folder.run_id, folder.path), timeout=1)
    assert not outcome.was_running and not judge_stop(outcome).failed
    assert outcome.message.startswith(f"run {folder.run_id} is not running (status: ")
    assert f"Note: {folder.state_file}: " in outcome.message
    assert main(["stop", folder.run_id, "--runs-dir", str(runs_dir), "--timeout", "1"]) == 0
    out = capsys.readouterr()
    assert "is not running" in out.out and "Traceback" not in out.err


def test_a_mirrored_state_that_is_not_an_object_is_refused_where_it_arrives():
    import base64

    with pytest.raises(WireError, match=r"data: expected state.json as a JSON object \(it holds a list"):
        parse_mirror_message({"file": "state.json", "data": base64.b64encode(b"[]").decode()})


# -- the stop request beside it --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, reason",
    [
        (b'{"reason": "grpo-tui stop", "time": 1}', "grpo-tui stop"),
        (b"[]", None),
        (b'{"reason": 5}', None),
        (b'{"reason": ""}', None),
        (b"\xff", None),
        (b'{"reas', None),
    ],
)
def test_the_stop_request_gives_its_reason_or_none_and_the_trainer_stops_either_way(tmp_path, data, reason):
    stop_file = tmp_path / "stop_request"
    stop_file.write_bytes(data)
    assert read_stop_reason(stop_file) == reason
    asked: list[str] = []
    controller = StopController(str(stop_file), asked.append, asked.append)
    assert controller.agreed_stop()
    assert asked == [f"stop file: {reason or 'stop requested'}"]
    assert read_stop_reason(tmp_path / "missing") is None


def test_a_slurm_runs_signal_reason_survives_a_bad_state_and_stop_file(tmp_path, monkeypatch):
    import signal

    folder = RunFolder.create(tmp_path, IDS[0])
    monkeypatch.setenv(slurm_job.JOB_ID_ENV, "42")
    monkeypatch.setenv(slurm_job.GRACE_ENV, "60")
    write(folder, b'{"slurm_end_time": "soon"}')
    folder.stop_file.write_bytes(b"[]")
    assert slurm_job.signal_reason(folder.path, signal.SIGTERM) == slurm_job.PREEMPTED
    write(folder, json.dumps({"slurm_end_time": time.time() + 30}).encode())
    assert slurm_job.signal_reason(folder.path, signal.SIGTERM) == slurm_job.TIME_LIMIT
    folder.stop_file.write_text('{"reason": "preempted"}')
    assert slurm_job.signal_reason(folder.path, signal.SIGTERM) == slurm_job.PREEMPTED


def test_a_term_that_follows_a_stop_request_keeps_who_asked(tmp_path, monkeypatch):
    import signal

    monkeypatch.delenv(slurm_job.JOB_ID_ENV, raising=False)
    folder = RunFolder.create(tmp_path, IDS[0])
    assert slurm_job.signal_reason(folder.path, signal.SIGTERM) == "SIGTERM received"
    folder.request_stop("grpo-tui app")
    assert slurm_job.signal_reason(folder.path, signal.SIGTERM) == "stop file: grpo-tui app"
    assert slurm_job.signal_reason(folder.path, signal.SIGINT) == "SIGINT received"
