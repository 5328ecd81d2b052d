"""The events stream and its schema: typed events, strict JSON, torn last lines, offsets, statuses, atomic state."""

from __future__ import annotations

import json
import math
import os
import stat

import pytest

from trainer_core.contract.run.event_log import (
    EventTail,
    EventWriter,
    dumps,
    last_step,
    parse_line,
    read_events,
    read_records,
)
from trainer_core.contract.run.events import (
    TYPED,
    Checkpoint,
    Error,
    Eval,
    EventType,
    HealthWarning,
    Metrics,
    NotifyFailed,
    Rewound,
    RunFinished,
    RunStarted,
    StopRequested,
    Summary,
    UnknownEvent,
    clean,
    decode,
)
from trainer_core.contract.run.folder import RunFolder, new_run_id
from trainer_core.contract.run.process import RUN_MARKER, process_matches, process_start_time, run_env
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import IllegalTransition, Status


def test_nan_and_inf_become_null_and_lines_are_strict_json(tmp_path):
    writer = EventWriter(tmp_path / "events.jsonl")
    writer.emit(Metrics(step=1, values={"loss": float("nan"), "kl": float("inf"), "reward": 0.5}))
    writer.emit(HealthWarning("stall", step=1, message="m", evidence={"nested": {"x": -math.inf}}))
    writer.close()
    lines = (tmp_path / "events.jsonl").read_text()
    assert "NaN" not in lines and "Infinity" not in lines
    event, warned = map(json.loads, lines.splitlines())
    assert (event["loss"], event["kl"], event["reward"]) == (None, None, 0.5) and warned["evidence"] == {
        "nested": {"x": None}
    }
    assert event["type"] == "metrics" and isinstance(event["time"], float)
    read, _ = read_events(tmp_path / "events.jsonl")  # a null is how a NaN is read back: a value of the step
    assert isinstance(read, Metrics) and read.step == 1 and read.type == "metrics"
    assert (read.get("loss"), read.get("reward"), read.get("absent", "-")) == (None, 0.5, "-")


def test_tail_keeps_a_torn_last_line_until_it_is_finished(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"type":"metrics","step":1}\n{"type":"metr')
    tail = EventTail(path)
    assert [e.step for e in tail.poll()] == [1]
    assert tail.poll() == []
    with open(path, "a") as fh:
        fh.write('ics","step":2}\n{"type":"metrics","step":3}\n')
    events = tail.poll()
    assert [e.step for e in events] == [2, 3] and all(isinstance(e, Metrics) for e in events)
    assert tail.bad_lines == 0


def test_a_corrupt_complete_line_is_skipped_not_fatal(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"type":"a"}\n{garbage\n[1,2]\n{"type":"b"}\n')
    tail = EventTail(path)
    assert [e.type for e in tail.poll()] == ["a", "b"]
    assert tail.bad_lines == 2


def test_blank_lines_are_skipped_and_other_non_objects_counted(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'\n   \n{"type":"a"}\r\nnull\n"text"\n{"type":"b","step":2}\n{"type":"c"')
    tail = EventTail(path)
    assert tail.poll_records() == [{"type": "a"}, {"type": "b", "step": 2}]
    assert tail.bad_lines == 2 and tail.offset == path.stat().st_size - len(b'{"type":"c"')


def test_missing_file_reads_as_empty(tmp_path):
    assert read_events(tmp_path / "nope.jsonl") == []
    assert read_records(tmp_path / "nope.jsonl") == []


def test_clean_handles_tensor_like_items():
    class Scalar:
        def item(self):
            return float("nan")

    assert clean({"a": Scalar(), "b": (1, 2.5)}) == {"a": None, "b": [1, 2.5]}


# -- the schema -----------------------------------------------------------------------------------------

ONE_OF_EACH = [
    RunStarted(time=1.0, run_id="r", pid=12, host="h", world_size=2, project_name="p", model="m", max_steps=10),
    RunStarted(
        time=1.5,
        run_id="r",
        pid=13,
        resumed_from="checkpoints/checkpoint-3",
        restart=1,
        skipped_checkpoints=[
            {
                "name": "checkpoint-4",
                "problems": ["trainer_state.json is missing"],
                "moved_to": "checkpoints/torn/checkpoint-4.20260101-000000",
            }
        ],
    ),
    Metrics(time=2.0, step=1, values={"reward": 0.5, "rewards/score_episode/mean": 0.5, "kl": None}),
    Summary(time=3.0, step=10, values={"train_runtime": 12.5, "train_loss": 0.01}),
    Checkpoint(time=4.0, step=5, path="checkpoints/checkpoint-5"),
    Checkpoint(time=4.5, step=10, path="final", final=True),
    StopRequested(time=5.0, reason="SIGTERM received", step=6),
    RunFinished(time=6.0, status=Status.STOPPED, reason="SIGTERM received", step=6),
    Error(time=7.0, kind="environment", message="boom", traceback="Traceback ...", case={"columns": {"a": 1}}, step=2),
    Error(time=7.5, message="the trainer exited with code 1"),
    HealthWarning(
        "kl_explosion", Severity.CRITICAL, 9, "KL is 3", "Lower --lr", {"kl_last_steps": [1, 2, 3]}, time=8.0
    ),
    NotifyFailed(
        time=9.0, url="https://hooks.slack.com/***", reason="connection refused", alert="run_end", attempts=3, step=9
    ),
    Eval(
        time=10.0,
        step=0,
        metrics={
            "answer": {"mean": 0.5, "pass@4": 0.75, "std": 0.1},
            "reward": {"mean": 0.2, "pass@4": None, "std": 0.0},
        },
        task_metrics=["answer"],
        prompts=8,
        generations=4,
        seconds=1.25,
        base=True,
    ),
    Rewound(
        time=11.0,
        from_step=60,
        to_step=40,
        checkpoint="checkpoint-40",
        reason="kl_explosion at step 57",
        by="rule",
        rule="kl_explosion",
        changes={"lr": {"from": 1e-5, "to": 5e-6}},
        revision=1,
    ),
]


@pytest.mark.parametrize("event", ONE_OF_EACH, ids=lambda e: str(e.type))
def test_every_event_type_round_trips_through_its_record_and_a_line(event):
    assert decode(event.to_record()) == event
    again = parse_line(dumps(event.to_record()).encode())
    assert again == event and type(again) is type(event) and again.to_record() == event.to_record()


def test_every_event_type_is_covered_and_named_by_its_type():
    assert {str(t) for t in EventType} == set(TYPED) == {str(e.type) for e in ONE_OF_EACH}
    for name, cls in TYPED.items():
        assert cls.type == name and EventType(name) == name


def test_a_record_is_flat_json_with_the_formats_field_names():
    metrics = Metrics(time=2.0, step=3, values={"reward": 0.25, "completions/mean_length": 11.0}).to_record()
    assert metrics == {"type": "metrics", "time": 2.0, "step": 3, "reward": 0.25, "completions/mean_length": 11.0}
    finished = RunFinished(time=6.0, status=Status.COMPLETED, reason=None, step=4).to_record()
    assert finished == {"type": "run_finished", "time": 6.0, "status": "completed", "reason": None, "step": 4}
    assert type(finished["status"]) is str and json.loads(dumps(finished)) == finished
    warning = HealthWarning("stall", "critical", 2, "no step").to_record()
    assert warning["severity"] == "critical" and type(warning["severity"]) is str and warning["evidence"] == {}
    assert "final" not in Checkpoint(time=1.0, step=1, path="p").to_record()
    assert not {"resumed_from", "restart", "skipped_checkpoints"} & set(RunStarted(time=1.0, run_id="r").to_record())
    assert isinstance(RunStarted().to_record()["time"], float)  # stamped when written


def test_decoding_parses_enums_and_is_lenient_about_missing_fields():
    finished = decode({"type": "run_finished", "time": 1.0, "status": "failed", "step": 3})
    assert isinstance(finished, RunFinished) and finished.status is Status.FAILED and finished.reason is None
    warning = decode({"type": "warning", "rule": "stall", "severity": "warn", "step": 7, "message": "m"})
    assert isinstance(warning, HealthWarning) and warning.severity is Severity.WARN and warning.advice == ""
    assert decode({"type": "metrics"}) == Metrics(step=0, values={})


def test_a_line_of_a_known_type_missing_its_fields_still_reads(tmp_path):
    """An older or hand-written line without a warning's fields must not stop a reader (the format is public)."""
    path = tmp_path / "events.jsonl"
    path.write_text('{"type":"warning","rule":"a"}\n{"type":"error"}\n{"type":"metrics","step":1}\n')
    tail = EventTail(path)
    events = tail.poll()
    assert [e.type for e in events] == ["warning", "error", "metrics"] and tail.bad_lines == 0
    assert events[0].rule == "a" and events[1].message == ""


def test_an_unknown_type_decodes_as_unknown_keeping_its_fields():
    record = {"type": "gpu_sample", "time": 3.5, "gpu": 0, "memory_used": 123, "nested": {"a": [1, 2]}}
    event = decode(dict(record))
    assert isinstance(event, UnknownEvent) and event.type == "gpu_sample"
    assert event.time == 3.5 and event.extra == {"gpu": 0, "memory_used": 123, "nested": {"a": [1, 2]}}
    assert event.to_record() == record


def test_an_unknown_key_of_a_known_type_is_kept_in_extra_and_written_back(tmp_path):
    record = {"type": "checkpoint", "time": 4.0, "step": 5, "path": "checkpoints/checkpoint-5", "size_mb": 12.5}
    event = decode(dict(record))
    assert isinstance(event, Checkpoint) and event.step == 5 and event.extra == {"size_mb": 12.5}
    assert event.to_record() == record
    with EventWriter(tmp_path / "events.jsonl") as writer:
        writer.emit(event)
    assert json.loads((tmp_path / "events.jsonl").read_text()) == record
    assert read_events(tmp_path / "events.jsonl")[0].extra == {"size_mb": 12.5}


def test_an_unknown_status_or_severity_is_kept_as_written():
    finished = decode({"type": "run_finished", "time": 1.0, "status": "paused", "step": 1})
    assert finished.status == "paused" and finished.to_record()["status"] == "paused"
    assert (
        decode({"type": "warning", "severity": "fatal", "rule": "r", "step": 1, "message": "m"}).severity
        is Severity.WARN
    )


def test_the_enums_are_their_values():
    assert EventType.METRICS == "metrics" and Status.COMPLETED == "completed" and Severity.WARN == "warn"
    assert f"{Status.STOPPED}" == "stopped" and str(EventType.RUN_FINISHED) == "run_finished"
    assert {"completed": 1}[Status.COMPLETED] == 1 and Status.RUNNING in {"running"}
    assert json.dumps({"s": Status.FAILED}) == '{"s": "failed"}'
    assert Status.parse("nope") is None and Status.parse(None, Status.LOST) is Status.LOST


# -- statuses -------------------------------------------------------------------------------------------


def test_status_groups():
    assert {s for s in Status if s.is_live} == {Status.QUEUED, Status.STARTING, Status.RUNNING, Status.STOPPING}
    assert Status.QUEUED.can_become(Status.STOPPED) and not Status.QUEUED.can_become(Status.STOPPING)
    assert {s for s in Status if s.is_final} == {Status.COMPLETED, Status.STOPPED, Status.FAILED}
    assert {s for s in Status if s.resumable} == {Status.COMPLETED, Status.STOPPED, Status.FAILED, Status.LOST}
    assert all(s.can_become(Status.STARTING) for s in Status if s.resumable)  # every ended run can be resumed
    assert not Status.LOST.is_live and not Status.LOST.is_final


def test_a_legal_chain_of_transitions_is_written(tmp_path):
    folder = RunFolder.create(tmp_path)
    for status in (
        "starting",
        Status.RUNNING,
        Status.STOPPING,
        Status.STOPPED,
        Status.STARTING,
        Status.RUNNING,
        Status.RUNNING,
        Status.FAILED,
        Status.STARTING,
        Status.COMPLETED,
    ):
        state = folder.write_state(status=status)
        assert state["status"] == status and type(state["status"]) is str
        assert folder.status() is Status(status)
    assert json.loads(folder.state_file.read_text())["status"] == "completed"


def test_an_illegal_transition_is_refused_and_names_both_statuses(tmp_path):
    folder = RunFolder.create(tmp_path)
    folder.write_state(status="running")
    folder.write_state(status="completed", last_step=3)
    with pytest.raises(IllegalTransition) as err:
        folder.write_state(status="running")
    assert "completed" in str(err.value) and "running" in str(err.value)
    assert (err.value.old, err.value.new) == (Status.COMPLETED, Status.RUNNING)
    assert folder.read_state()["status"] == "completed" and folder.read_state()["last_step"] == 3
    folder.write_state(status=Status.COMPLETED)  # the same status is always fine
    second = RunFolder.create(tmp_path, "second")
    second.write_state(status="running")
    second.write_state(status="stopped")
    with pytest.raises(IllegalTransition, match="a stopped run cannot become stopping"):
        second.write_state(status="stopping")
    with pytest.raises(ValueError):
        folder.write_state(status="paused")


def test_record_end_writes_the_final_event_then_the_state(tmp_path):
    folder = RunFolder.create(tmp_path)
    folder.initial_state()
    folder.write_state(status="running")
    folder.record_end(Status.STOPPED, "SIGTERM received", 4)
    [event] = read_events(folder.events_file)
    assert event == RunFinished(time=event.time, status=Status.STOPPED, reason="SIGTERM received", step=4)
    assert isinstance(event.time, float)
    assert folder.status() is Status.STOPPED and folder.read_state()["exit_reason"] == "SIGTERM received"


# -- severities -----------------------------------------------------------------------------------------


def test_severities_are_ordered_and_only_warn_and_critical_alarm():
    assert [s.rank for s in (Severity.INFO, Severity.WARN, Severity.CRITICAL)] == [0, 1, 2]
    assert sorted(Severity, key=lambda s: s.rank) == [Severity.INFO, Severity.WARN, Severity.CRITICAL]
    assert [s.alarming for s in Severity] == [False, True, True]
    assert Severity.parse("critical") is Severity.CRITICAL and Severity.parse("loud", Severity.WARN) is Severity.WARN
    assert HealthWarning("r", "info", 1, "m").severity is Severity.INFO


# -- the run folder -------------------------------------------------------------------------------------


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
    assert folder.read_state()["status"] == "running" and folder.status() is Status.RUNNING
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


def test_last_step_is_the_last_complete_metrics_event(tmp_path):
    path = tmp_path / "events.jsonl"
    assert last_step(path) == 0
    with EventWriter(path) as writer:
        writer.emit(RunStarted(run_id="r"))
        assert last_step(path) == 0
        for step in (1, 2, 3):
            writer.emit(Metrics(step=step, values={"reward": step / 10}))
        writer.emit(Checkpoint(step=3, path="checkpoints/checkpoint-3"))
    with open(path, "a") as fh:
        fh.write('{"type":"metrics","step":4')  # torn: not written yet
    assert last_step(path) == 3


def test_every_process_of_a_run_carries_its_marker(tmp_path):
    env = run_env(tmp_path / "run", {"EXTRA": "1", "TOKENIZERS_PARALLELISM": "true"})
    assert env[RUN_MARKER] == str((tmp_path / "run").resolve()) and env["PYTHONUNBUFFERED"] == "1"
    assert env["EXTRA"] == "1" and env["TOKENIZERS_PARALLELISM"] == "true" and env["PATH"] == os.environ["PATH"]
