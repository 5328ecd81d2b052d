"""The run catalog, live status, run references, the runs table and the log/dashboard views, on hand-built
run folders.

Every folder here is written the way the trainer writes one (RunFolder state, EventWriter with typed events),
and every process is a real one: the test's own, a killed ``sleep``, a live ``sleep`` under a wrong start time.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from grpo_tui.cli.logs import print_log
from grpo_tui.cli.runs import format_table
from grpo_tui.formatting import format_duration, format_steps, format_time, short_model
from grpo_tui.services.catalog.folders import (
    RunInfo,
    UnknownRunError,
    list_runs,
    resolve_run,
    run_info,
    tail_events,
    warning_summary,
)
from grpo_tui.services.catalog.status import live_status
from grpo_tui.services.stream.folded import RunStream
from grpo_tui.services.stream.live_view import RunView, render, watch
from grpo_tui.services.stream.log_follow import log_chunks
from grpo_tui.services.stream.rejected_lines import skipped_notice
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import BLOCK_SIZE, BackwardLines, EventWriter, read_events, scan_events
from trainer_core.contract.run.events import (
    Checkpoint,
    Error,
    Event,
    EventType,
    HealthWarning,
    Metrics,
    RunFinished,
    RunStarted,
    StopRequested,
)
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.line_check import CHECK_BYTES, SkippedLines, check_end
from trainer_core.contract.run.process import process_start_time
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status

from ..helpers import ROOT, wait_for

IDS = ["20260101-090000-aaaaaa", "20260102-090000-bbbbbb", "20260102-091500-bbbccc", "20260103-120000-cccccc"]


def make_run(
    runs_dir: Path, run_id: str, status: Status | str = Status.COMPLETED, pid: int | None = None, **config
) -> RunFolder:
    status = Status(status)
    folder = RunFolder.create(runs_dir, run_id)
    settings = {
        "model": "org/Qwen2.5-0.5B-Instruct",
        "rl_env_module": "env.py",
        "rl_env_class": "Env",
        "project_name": "demo",
        "max_steps": 10,
        **config,
    }
    RunConfig(**settings).save(folder.config_file)
    folder.initial_state(pid or os.getpid())
    if status is Status.RUNNING:
        folder.write_state(status=Status.RUNNING, max_steps=settings["max_steps"])
    elif status.is_final:
        folder.write_state(
            status=status,
            ended=round(time.time() + 5, 3),
            last_step=3,
            exit_reason=None if status is Status.COMPLETED else f"{status} for a reason",
        )
    return folder


def emit_steps(folder: RunFolder, steps: range, **extra) -> None:
    with EventWriter(folder.events_file) as writer:
        for step in steps:
            writer.emit(
                Metrics(
                    step=step,
                    values={
                        "loss": 0.01 * step,
                        "reward": step / 10,
                        "reward_std": 0.2,
                        "entropy": 1.5,
                        "completions/mean_length": 11.0,
                        "completions/clipped_ratio": 0.0,
                        "rewards/score_episode/mean": step / 10,
                        "rewards/score_episode/std": 0.1,
                        **extra,
                    },
                )
            )


def emit(folder: RunFolder, *events: Event) -> None:
    with EventWriter(folder.events_file) as writer:
        for event in events:
            writer.emit(event)


def append(folder: RunFolder, data: bytes) -> None:
    with open(folder.events_file, "ab") as fh:
        fh.write(data)


def with_bad_lines(runs_dir: Path, run_id: str = IDS[0]) -> RunFolder:
    """A live run whose events.jsonl holds, among good steps, a line that is not JSON (line 3) and a metrics event
    whose step is "x" (line 6), and ends in a torn line: a writer may still be finishing it, so it is no bad line."""
    folder = make_run(runs_dir, run_id, "running")
    emit_steps(folder, range(1, 3))
    append(folder, b"not json at all\n")
    emit_steps(folder, range(3, 5))
    append(folder, b'{"type": "metrics", "step": "x", "reward": 1}\n')
    emit_steps(folder, range(5, 6))
    append(folder, b'{"type": "metrics", "step": 6, "rew')
    return folder


def warning(rule: str, severity: Severity, step: int, message: str = "m", advice: str = "a") -> HealthWarning:
    return HealthWarning(rule, severity, step, message, advice, {})


@pytest.fixture
def sleeper():
    procs = []

    def start() -> subprocess.Popen:
        proc = subprocess.Popen(["sleep", "60"])
        procs.append(proc)
        wait_for(lambda: process_start_time(proc.pid) is not None, timeout=10)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- status ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [Status.COMPLETED, Status.STOPPED, Status.FAILED])
def test_a_final_status_is_read_from_the_state(runs_dir, status):
    folder = make_run(runs_dir, IDS[0], status)
    assert live_status(folder) is status
    info = run_info(folder)
    assert info.status is status
    assert info.exit_reason == (None if status is Status.COMPLETED else f"{status.value} for a reason")


def test_a_running_state_whose_process_is_this_one_is_running(runs_dir):
    folder = make_run(runs_dir, IDS[0], "running")
    assert folder.read_state()["pid"] == os.getpid()
    assert live_status(folder) is Status.RUNNING


def test_the_launcher_process_alone_keeps_a_run_live(runs_dir, sleeper):
    proc = sleeper()
    folder = make_run(runs_dir, IDS[0], "running", pid=proc.pid)
    proc.kill()
    proc.wait()
    folder.write_state(root_pid=os.getpid(), root_start_time=process_start_time(os.getpid()))
    assert live_status(folder) is Status.RUNNING


def test_a_running_state_whose_process_died_is_lost(runs_dir, sleeper):
    proc = sleeper()
    folder = make_run(runs_dir, IDS[0], "running", pid=proc.pid)
    assert live_status(folder) is Status.RUNNING
    proc.kill()
    proc.wait()
    assert live_status(folder) is Status.LOST
    assert run_info(folder).status is Status.LOST


def test_a_pid_reused_by_an_unrelated_process_is_lost(runs_dir, sleeper):
    proc = sleeper()
    folder = make_run(runs_dir, IDS[0], "running")
    folder.write_state(pid=proc.pid, pid_start_time=process_start_time(proc.pid) - 3600)
    assert proc.poll() is None
    assert live_status(folder) is Status.LOST


def test_a_folder_without_state_is_starting_briefly_then_lost(runs_dir):
    folder = RunFolder.create(runs_dir, IDS[0])
    RunConfig(model="m", rl_env_module="e", rl_env_class="E").save(folder.config_file)
    assert live_status(folder) is Status.STARTING
    old = time.time() - 60
    os.utime(folder.path, (old, old))
    assert live_status(folder) is Status.LOST


# -- reading the events file ----------------------------------------------------------------------------


def test_last_metrics_come_from_the_end_of_a_large_file_with_a_torn_line(runs_dir):
    folder = make_run(runs_dir, IDS[0], "completed")
    emit_steps(folder, range(1, 50_001), grad_norm=1.0, learning_rate=1e-5, frac_reward_zero_std=0.0, step_time=0.3)
    emit(folder, Checkpoint(step=50_000, path="checkpoints/checkpoint-50000"))
    with open(folder.events_file, "a") as fh:
        fh.write("not json at all\n[1, 2]\n")
        fh.write('{"type":"metrics","step":50001,"reward":99')
    size = folder.events_file.stat().st_size
    assert size > 15_000_000

    lines = BackwardLines(folder.events_file)
    last_event, metrics = tail_events(lines)
    assert isinstance(metrics, Metrics) and (metrics.step, metrics.get("reward")) == (50_000, 5_000.0)
    assert isinstance(last_event, Checkpoint) and last_event.type == "checkpoint" and last_event.step == 50_000
    assert lines.bytes_read <= BLOCK_SIZE < size / 200

    run_info(make_run(runs_dir, IDS[1]))  # first-call imports out of the timing below
    started = time.perf_counter()
    info = run_info(folder)
    quick = time.perf_counter() - started
    started = time.perf_counter()
    assert read_events(folder.events_file)[-1].type == EventType.CHECKPOINT
    full = time.perf_counter() - started
    assert (info.step, info.last_reward, info.total) == (50_000, 5_000.0, 10)
    assert quick < full / 2, (quick, full)


def test_backward_lines_match_the_forward_read_for_any_block_size(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = [json.dumps({"type": "x", "n": n, "pad": "y" * (n * 7 % 50)}) for n in range(200)]
    path.write_text("\n".join(lines) + "\n\n" + '{"type":"x","n":200,"torn' + "z" * 300)
    for block in (1, 7, 64, 4096):
        assert [line.decode() for line in BackwardLines(path, block_size=block)] == lines[::-1]
    assert list(BackwardLines(tmp_path / "missing.jsonl")) == []
    path.write_text('{"type":"x"}')
    assert list(BackwardLines(path, block_size=4)) == []


def test_scan_events_stops_at_the_last_complete_line(tmp_path):
    path = tmp_path / "events.jsonl"
    done = (
        '{"type":"warning","rule":"a","severity":"warn","step":1,"message":"m"}\n{"type":"metrics","step":1}\n'
        '{"type":"error","message":"boom"}\n'
    )
    path.write_text(done + '{"type":"warning","rule":"torn"')
    events, end = scan_events(path, (EventType.WARNING, EventType.ERROR))
    assert [e.type for e in events] == ["warning", "error"] and end == len(done)
    assert isinstance(events[0], HealthWarning) and events[0].rule == "a"
    assert isinstance(events[1], Error) and events[1].message == "boom"
    assert scan_events(path, (EventType.WARNING,), start=end) == ([], end)


def test_warnings_count_warn_and_critical_and_follow_appends(runs_dir):
    folder = make_run(runs_dir, IDS[0], "running")
    emit_steps(folder, range(1, 4))
    emit(folder, warning("reward_flat", Severity.WARN, 3), warning("just_saying", Severity.INFO, 3))
    info = run_info(folder)
    assert (info.warnings, info.last_warning, info.step) == (1, "reward_flat", 3)
    emit(folder, warning("kl_exploding", Severity.CRITICAL, 4))
    assert (run_info(folder).warnings, run_info(folder).last_warning) == (2, "kl_exploding")
    assert warning_summary(folder.events_file) == (2, "kl_exploding")


def test_run_info_fields_and_json(runs_dir):
    folder = make_run(runs_dir, IDS[0], "running", max_steps=-1, epochs=1)
    assert run_info(folder).total is None and run_info(folder).step is None
    folder.write_state(max_steps=40)
    emit_steps(folder, range(1, 6))
    info = run_info(folder)
    assert isinstance(info, RunInfo) and info.status is Status.RUNNING and info.alerts == []
    data = json.loads(json.dumps(info.to_wire()))
    assert data["run_id"] == IDS[0] and data["path"] == str(folder.path)
    assert (data["project"], data["model"], data["status"]) == ("demo", "org/Qwen2.5-0.5B-Instruct", "running")
    assert (data["step"], data["total"], data["last_reward"], data["ended"]) == (5, 40, 0.5, None)
    assert data["duration"] >= 0 and data["alerts"] == []


def test_the_json_row_of_a_run_with_alerts_is_plain_strings(runs_dir, sleeper):
    proc = sleeper()
    folder = make_run(runs_dir, IDS[0], "running", pid=proc.pid)
    emit_steps(folder, range(1, 3))
    emit(folder, Error(kind="trainer_exit", message="the trainer was killed by SIGKILL", step=2))
    proc.kill()
    proc.wait()
    info = run_info(folder)
    assert info.status is Status.LOST and [a.rule for a in info.alerts] == ["crash_killed"]
    assert isinstance(info.alerts[0], HealthWarning) and info.alerts[0].severity is Severity.CRITICAL
    data = info.to_wire()
    assert data["status"] == "lost" and type(data["status"]) is str
    [alert] = data["alerts"]
    assert alert["rule"] == "crash_killed" and alert["severity"] == "critical" and type(alert["severity"]) is str
    assert "type" not in alert and "time" not in alert and alert["step"] == 2
    assert json.loads(json.dumps(data)) == data


# -- listing and resolving ------------------------------------------------------------------------------


def test_list_runs_is_newest_first_and_skips_other_entries(runs_dir):
    for run_id in IDS:
        make_run(runs_dir, run_id)
    (runs_dir / "notes").mkdir()
    (runs_dir / "readme.txt").write_text("hi")
    assert [r.run_id for r in list_runs(runs_dir)] == IDS[::-1]
    assert list_runs(runs_dir / "nowhere") == []


@pytest.fixture
def four_runs(runs_dir):
    for run_id in IDS:
        make_run(runs_dir, run_id)
    return runs_dir


def test_resolve_by_id_prefix_path_and_latest(four_runs):
    assert resolve_run(four_runs, IDS[1]).run_id == IDS[1]
    assert resolve_run(four_runs, "20260101").run_id == IDS[0]
    assert resolve_run(four_runs, "20260102-0915").run_id == IDS[2]
    assert resolve_run(four_runs, "latest").run_id == IDS[3]
    assert resolve_run(four_runs, str(four_runs / IDS[0])).path == four_runs / IDS[0]


def test_an_ambiguous_prefix_lists_the_matches(four_runs):
    with pytest.raises(UnknownRunError) as err:
        resolve_run(four_runs, "20260102")
    assert IDS[1] in str(err.value) and IDS[2] in str(err.value) and "2 runs" in str(err.value)


def test_a_typo_suggests_the_closest_id_and_names_the_runs_dir(four_runs):
    with pytest.raises(LookupError) as err:
        resolve_run(four_runs, "20260103-120000-ccccce")
    assert "did you mean 20260103-120000-cccccc" in str(err.value)
    assert str(four_runs) in str(err.value)


def test_latest_in_an_empty_or_missing_runs_dir_says_where_it_looked(tmp_path):
    with pytest.raises(UnknownRunError) as err:
        resolve_run(tmp_path / "nowhere", "latest")
    assert str(tmp_path / "nowhere") in str(err.value) and "--runs-dir" in str(err.value)


# -- table ----------------------------------------------------------------------------------------------


def test_the_table_renders_every_status(runs_dir, sleeper):
    dead = sleeper()
    make_run(runs_dir, IDS[0], "completed")
    make_run(runs_dir, IDS[1], "stopped")
    make_run(runs_dir, IDS[2], "failed")
    make_run(runs_dir, IDS[3], "running", pid=dead.pid)
    dead.kill()
    dead.wait()
    running = make_run(runs_dir, "20260104-000000-dddddd", "running")
    emit_steps(running, range(1, 4))
    emit(running, warning("reward_flat", Severity.WARN, 3))
    console = Console(record=True, width=200, file=io.StringIO())
    console.print(format_table(list_runs(runs_dir)))
    text = console.export_text()
    for word in (
        "completed",
        "stopped",
        "failed",
        "lost",
        "running",
        "Qwen2.5-0.5B-Instruct",
        "3/10",
        "0.300",
        "1 (reward_flat)",
        "demo",
    ):
        assert word in text, word
    assert "org/" not in text


def test_the_table_has_a_skipped_column_only_while_a_run_has_skipped_lines(runs_dir):
    emit_steps(make_run(runs_dir, IDS[1], "running"), range(1, 3))
    console = Console(record=True, width=200, file=io.StringIO())
    console.print(format_table(list_runs(runs_dir)))
    assert "skipped" not in console.export_text()
    with_bad_lines(runs_dir, IDS[0])
    runs = list_runs(runs_dir)
    assert runs[1].skipped == {"events.jsonl": SkippedLines(2, "events.jsonl line 3: not JSON")}
    assert runs[0].skipped == {} and runs[0].to_wire()["skipped_lines"] == {}
    console = Console(record=True, width=200, file=io.StringIO())
    console.print(format_table(runs))
    header, clean, bad = console.export_text().splitlines()
    column = header.index("skipped")
    assert clean[column:].startswith("0 ") and bad[column:].startswith("2 (events.jsonl) ")


def test_durations_steps_and_models_in_plain_words():
    assert format_duration(3723) == "1:02:03" and format_duration(None) == "-"
    assert (format_steps(None, None), format_steps(None, 40), format_steps(3, 40), format_steps(3, None)) == (
        "-",
        "-/40",
        "3/40",
        "3",
    )
    assert short_model("org/Qwen2.5-0.5B-Instruct") == "Qwen2.5-0.5B-Instruct" and short_model(None) == "-"
    assert short_model("/models/llama/") == "llama" and short_model("x" * 40, width=10) == "x" * 9 + "…"


def test_started_times_are_local_and_short_this_year():
    now = time.time()
    old = now - 2 * 366 * 86400
    assert format_time(now, now) == time.strftime("%m-%d %H:%M", time.localtime(now))
    assert format_time(old, now) == time.strftime("%Y-%m-%d", time.localtime(old))
    assert format_time(None) == "-"


# -- live views -----------------------------------------------------------------------------------------


def frame(folder: RunFolder) -> str:
    console = Console(record=True, width=100, file=io.StringIO())
    watch(folder, console, once=True)
    return console.export_text()


def test_watch_shows_metrics_and_says_kl_is_not_measured_without_a_kl_penalty(runs_dir):
    folder = make_run(runs_dir, IDS[0], "running", rl_kl_coef=0.0)
    emit(
        folder,
        RunStarted(
            run_id=folder.run_id, pid=os.getpid(), host="h", world_size=1, project_name="demo", model="m", max_steps=10
        ),
    )
    emit_steps(folder, range(1, 5))
    text = frame(folder)
    assert IDS[0] in text and "running" in text and "step 4/10" in text
    assert "reward" in text and "0.4000" in text and "rewards/score_episode/mean" in text
    assert "not measured (rl_kl_coef = 0)" in text


def test_watch_shows_kl_when_measured_and_a_warnings_advice_and_the_error(runs_dir):
    folder = make_run(runs_dir, IDS[0], "failed", rl_kl_coef=0.1)
    emit_steps(folder, range(1, 3), kl=0.0123)
    emit(
        folder,
        warning(
            "reward_flat", Severity.WARN, 2, "Every completion scores 0.", "Check score_episode on a few rows by hand."
        ),
        Error(kind="exception", message="RuntimeError: out of memory", traceback="Traceback ...", step=2),
        RunFinished(status=Status.FAILED, reason="RuntimeError: out of memory", step=2),
    )
    text = frame(folder)
    assert "0.0123" in text and "not measured" not in text
    assert "reward_flat" in text and "advice: Check score_episode on a few rows by hand." in text
    assert "out of memory" in text and "failed" in text


def test_watch_once_names_the_lines_it_skipped_as_the_monitor_does_but_not_a_torn_last_line(runs_dir):
    folder = with_bad_lines(runs_dir)
    where = "events.jsonl line 3: not JSON"
    notice, *rest = frame(folder).splitlines()
    assert notice == "2 lines of events.jsonl skipped, the rest shown; first: events.jsonl line 3: not JSON"
    assert notice == skipped_notice(2, where)  # the monitor's wording
    stream = RunStream(folder)
    stream.poll()
    assert (stream.skipped, stream.skipped_where()) == (2, where)  # and the monitor skips the same lines
    assert "step 5/10" in "\n".join(rest) and "0.5000" in "\n".join(rest)  # the rest is shown
    append(folder, f'ard": 0.6, "time": {time.time()}}}\n'.encode())  # the writer finishes its line: a good one
    notice, *rest = frame(folder).splitlines()
    assert notice.startswith("2 lines of events.jsonl skipped") and "step 6/10" in "\n".join(rest)
    clean = make_run(runs_dir, IDS[1], "running")
    emit_steps(clean, range(1, 3))
    assert "skipped" not in frame(clean)


def test_a_long_events_file_is_checked_at_its_end_only_and_the_line_says_so(runs_dir):
    folder = make_run(runs_dir, IDS[0], "running")
    append(folder, b"early garbage, far before the end\n")
    emit_steps(folder, range(1, 1000))
    at = folder.events_file.stat().st_size
    assert at > 2 * CHECK_BYTES
    append(folder, b"[1, 2]\n")
    emit_steps(folder, range(1000, 1003))
    data = folder.events_file.read_bytes()
    skipped = check_end(folder.events_file)
    assert skipped is not None and skipped.count == 1  # the early line lies before the part checked
    assert (
        len(data) - CHECK_BYTES <= skipped.checked_from
        and data[skipped.checked_from - 1 : skipped.checked_from] == b"\n"
    )
    assert skipped.first == f"events.jsonl at byte {at}: a JSON list, not an object"
    assert frame(folder).splitlines()[0] == (
        f"1 line of events.jsonl skipped (checked from byte {skipped.checked_from} to its end), the rest shown; "
        f"first: events.jsonl at byte {at}: a JSON list, not an object"
    )
    assert run_info(folder).skipped == {"events.jsonl": skipped}
    assert run_info(folder).to_wire()["skipped_lines"] == {"events.jsonl": skipped.to_record()}


def test_a_skipped_lines_reason_is_shown_as_text_never_as_markup_or_escapes(runs_dir):
    folder = make_run(runs_dir, IDS[0], "running")
    emit_steps(folder, range(1, 3))
    append(folder, json.dumps({"type": "metrics", "step": "[bold red]x\x1b]52;c;eA==\x07"}).encode() + b"\n")
    console = Console(record=True, width=100, file=io.StringIO(), force_terminal=True)
    watch(folder, console, once=True)
    text = console.export_text()
    assert "events.jsonl line 3: metrics: step must be a whole number" in text and "[bold red]x" in text
    assert "\x1b]52" not in console.file.getvalue() and "\x07" not in console.file.getvalue()  # type: ignore[attr-defined]


def test_watch_says_why_a_run_ended_without_its_final_event(runs_dir, sleeper):
    failed = make_run(runs_dir, IDS[0], "failed")
    assert "run failed: failed for a reason" in frame(failed)
    proc = sleeper()
    lost = make_run(runs_dir, IDS[1], "running", pid=proc.pid)
    emit_steps(lost, range(1, 3))
    proc.kill()
    proc.wait()
    text = frame(lost)
    assert "lost" in text and "gone without finishing" in text and "step 2/10" in text


def test_watch_returns_the_final_status_of_a_finished_run(runs_dir):
    folder = make_run(runs_dir, IDS[0], "stopped")
    emit_steps(folder, range(1, 3))
    console = Console(file=io.StringIO(), width=100)
    assert watch(folder, console, refresh=0.01) is Status.STOPPED


def test_watch_follows_a_live_run_until_its_process_finishes_it(runs_dir):
    folder = make_run(runs_dir, IDS[0], "running")
    emit_steps(folder, range(1, 3))
    trainer = (
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from trainer_core.contract.run.event_log import EventWriter\n"
        "from trainer_core.contract.run.events import Metrics\n"
        "from trainer_core.contract.run.process import process_start_time\n"
        "from trainer_core.contract.run.folder import RunFolder\n"
        "from trainer_core.contract.run.status import Status\n"
        "folder = RunFolder(Path(sys.argv[1])); writer = EventWriter(folder.events_file)\n"
        "folder.write_state(pid=os.getpid(), pid_start_time=process_start_time(os.getpid()))\n"
        "time.sleep(0.5)\n"
        "for step in (3, 4):\n"
        "    writer.emit(Metrics(step=step, values={'reward': step / 10, 'loss': 0.1})); time.sleep(0.3)\n"
        "    if step == 3:\n"  # two lines that are no event, appended while the view is open
        '        with open(folder.events_file, \'ab\') as fh: fh.write(b\'1\\n{"type": "metrics", "step": "x"}\\n\')\n'
        "folder.record_end(Status.COMPLETED, None, 4, emit=writer.emit)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", trainer, str(folder.path)], cwd=ROOT)
    try:
        wait_for(lambda: folder.read_state()["pid"] == proc.pid, timeout=30)
        console = Console(record=True, width=100, file=io.StringIO())
        assert watch(folder, console, refresh=0.05) is Status.COMPLETED
    finally:
        proc.wait(timeout=30)
    text = console.export_text()
    assert "step 2/10" in text and "step 4/10  reward 0.4000" in text and "run completed at step 4" in text
    told = [line for line in text.splitlines() if "skipped" in line]  # once, when the first was skipped
    assert len(told) == 1 and told[0].startswith("2 lines of events.jsonl skipped (checked from byte "), told
    assert told[0].endswith(": a JSON int, not an object")


def test_the_live_dashboard_counts_the_lines_appended_that_are_no_event(runs_dir):
    folder = make_run(runs_dir, IDS[0], "running")
    emit_steps(folder, range(1, 3))
    view = RunView(folder)
    start = folder.events_file.stat().st_size
    append(folder, b"not json\n")
    emit_steps(folder, range(3, 5))
    append(folder, json.dumps({"type": "metrics", "step": "x"}).encode() + b"\n")
    assert [e.step for e in view.update() if isinstance(e, Metrics)] == [3, 4]
    assert view.appended_skipped == SkippedLines(2, f"events.jsonl at byte {start}: not JSON", checked_from=start)
    console = Console(record=True, width=200, file=io.StringIO())
    console.print(render(view.snapshot()))
    assert f"2 lines of events.jsonl skipped (checked from byte {start} to its end), the rest shown" in (
        console.export_text()
    )


def test_the_dashboard_tails_new_events_after_catching_up(runs_dir):
    folder = make_run(runs_dir, IDS[0], "running")
    emit_steps(folder, range(1, 3))
    view = RunView(folder)
    assert view.snapshot().step == 2
    emit_steps(folder, range(3, 6))
    emit(folder, StopRequested(reason="SIGTERM received", step=5))
    new = view.update()
    assert [e.type for e in new] == ["metrics"] * 3 + ["stop_requested"]
    assert [type(e) for e in new] == [Metrics] * 3 + [StopRequested] and [e.step for e in new] == [3, 4, 5, 5]
    assert view.status is Status.RUNNING
    snap = view.snapshot()
    assert snap.step == 5 and snap.stop_reason == "SIGTERM received"
    assert snap.steps_per_s is None or snap.steps_per_s > 0
    console = Console(record=True, width=100, file=io.StringIO())
    console.print(render(snap))
    assert "stop requested" in console.export_text()


def test_logs_print_the_log_once_or_follow_it_until_the_process_ends(runs_dir):
    folder = RunFolder.create(runs_dir, IDS[0])
    script = (
        "import sys, time\n"
        "for n in range(3):\n"
        "    with open(sys.argv[1], 'a') as fh: fh.write(f'line {n} ✓\\n')\n"
        "    time.sleep(0.4)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(folder.log_file)], cwd=ROOT)
    try:
        folder.write_state(
            status="running", pid=proc.pid, pid_start_time=process_start_time(proc.pid), started=time.time()
        )
        wait_for(lambda: folder.log_file.exists(), timeout=20)
        once = io.StringIO()
        print_log(log_chunks(folder), once)
        assert live_status(folder) is Status.RUNNING
        assert once.getvalue().startswith("line 0 ✓\n")

        out = io.StringIO()
        print_log(log_chunks(folder, follow=True, poll=0.05), out)
        assert live_status(folder) is Status.LOST
        assert out.getvalue() == "line 0 ✓\nline 1 ✓\nline 2 ✓\n"
        assert proc.poll() is not None
    finally:
        proc.kill()
        proc.wait()


def test_logs_of_a_run_without_a_log_print_nothing(runs_dir):
    folder = make_run(runs_dir, IDS[0], "completed")
    out = io.StringIO()
    print_log(log_chunks(folder, follow=True), out)
    assert out.getvalue() == "" and live_status(folder) is Status.COMPLETED


def test_the_views_never_import_the_training_stack_or_textual():
    code = (
        "import sys, grpo_tui.services.catalog.folders, grpo_tui.services.catalog.status, grpo_tui.services.stream.live_view\n"
        "import grpo_tui.formatting, grpo_tui.palette, grpo_tui.cli.runs\n"
        "from grpo_tui.services.catalog.folders import list_runs; from grpo_tui.cli.runs import format_table\n"
        "format_table(list_runs('/nonexistent'))\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
        ).stdout.split()
    )
    assert not loaded & {"torch", "transformers", "trl", "datasets", "peft", "textual"}


def test_a_character_split_between_two_reads_of_the_log_comes_out_whole(tmp_path):
    from grpo_tui.services.stream.log_follow import LogFollower

    log = tmp_path / "trainer.log"
    line = "step 1 ✓\n".encode()
    log.write_bytes(line[:-2])  # the trainer has written only part of the check mark
    follower = LogFollower(log)
    first = follower.read()
    with open(log, "ab") as fh:
        fh.write(line[-2:])
    assert first + follower.read() == "step 1 ✓\n"
    log.write_text("again\n")  # truncated by hand: read from the start
    assert follower.read() == "again\n"
    assert LogFollower(log, limit=3).read() == "in\n"
    assert LogFollower(tmp_path / "missing.log").read() == ""
