"""The events stream: strict JSON, torn last lines, offsets, and atomic state."""

from __future__ import annotations

import json
import math
import os
import stat

from trainer_core.contract.event_log import EventTail, EventWriter, read_events
from trainer_core.contract.events import clean
from trainer_core.contract.run_folder import RunFolder, new_run_id, process_matches, process_start_time


def test_nan_and_inf_become_null_and_lines_are_strict_json(tmp_path):
    writer = EventWriter(tmp_path / "events.jsonl")
    writer.emit("metrics", step=1, loss=float("nan"), kl=float("inf"), reward=0.5, nested={"x": -math.inf})
    writer.close()
    line = (tmp_path / "events.jsonl").read_text()
    assert "NaN" not in line and "Infinity" not in line
    event = json.loads(line)
    assert (event["loss"], event["kl"], event["reward"], event["nested"]) == (None, None, 0.5, {"x": None})
    assert event["type"] == "metrics" and isinstance(event["time"], float)


def test_tail_keeps_a_torn_last_line_until_it_is_finished(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"type":"metrics","step":1}\n{"type":"metr')
    tail = EventTail(path)
    assert [e["step"] for e in tail.poll()] == [1]
    assert tail.poll() == []
    with open(path, "a") as fh:
        fh.write('ics","step":2}\n{"type":"metrics","step":3}\n')
    assert [e["step"] for e in tail.poll()] == [2, 3]
    assert tail.bad_lines == 0


def test_a_corrupt_complete_line_is_skipped_not_fatal(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"type":"a"}\n{garbage\n[1,2]\n{"type":"b"}\n')
    tail = EventTail(path)
    assert [e["type"] for e in tail.poll()] == ["a", "b"]
    assert tail.bad_lines == 2


def test_missing_file_reads_as_empty(tmp_path):
    assert read_events(tmp_path / "nope.jsonl") == []


def test_clean_handles_tensor_like_items():
    class Scalar:
        def item(self):
            return float("nan")

    assert clean({"a": Scalar(), "b": (1, 2.5)}) == {"a": None, "b": [1, 2.5]}


def test_run_folder_is_private_and_ids_sort_by_time(tmp_path):
    folder = RunFolder.create(tmp_path / "runs")
    assert stat.S_IMODE(os.stat(folder.path).st_mode) == 0o700
    assert new_run_id(1_000_000) < new_run_id(2_000_000)
    assert new_run_id(1_000_000.001) < new_run_id(1_000_000.5)  # two runs in the same second stay in order
    assert len({new_run_id(5) for _ in range(50)}) == 50


def test_state_is_replaced_atomically_and_records_identity(tmp_path):
    folder = RunFolder.create(tmp_path)
    state = folder.initial_state()
    assert state["status"] == "starting" and state["pid"] == os.getpid()
    assert process_matches(state["pid"], state["pid_start_time"])
    assert not process_matches(state["pid"], state["pid_start_time"] - 100)
    folder.write_state(status="running")
    assert folder.read_state()["status"] == "running"
    assert [p.name for p in folder.path.iterdir()] == ["state.json"]


def test_unwritable_runs_dir_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    try:
        RunFolder.create(blocker / "runs")
    except OSError as exc:
        assert "cannot create a run folder" in str(exc) and "--runs-dir" in str(exc)
    else:
        raise AssertionError("expected an OSError")


def test_process_start_time_of_a_missing_pid_is_none():
    assert process_start_time(2**22 + 12345) is None
