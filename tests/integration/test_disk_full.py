"""A disk that fills mid-run, for real: a small tmpfs as the runs folder (root only; skipped, with the reason,
where mounting is not allowed). The run must end ``failed`` with its cause, every event written before must
stay intact, ``runs`` and the app must say why, and a resume after freeing space must continue from the last
complete checkpoint. The tmpfs is unmounted in teardown whatever happens."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import pytest

from grpo_tui.app import make_app
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.screens.runs import RunsScreen
from grpo_tui.services.catalog.health import watcher_warnings
from trainer_core.contract.run.disk import usage
from trainer_core.contract.run.event_log import EventTail, EventWriter
from trainer_core.contract.run.events import Checkpoint, Error, HealthWarning, Metrics, RunFinished, RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status

from ..helpers import cli, events_of, only_run, pattern_args

DISK_SIZE = "6M"  # a checkpoint of the tiny model is ~1.3 MiB: the 5th does not fit


def _mount(target: Path, size: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(target)], capture_output=True, text=True
    )


@pytest.fixture
def small_disk(tmp_path):
    """A DISK_SIZE tmpfs at tmp_path/disk, and a function that resizes it; always unmounted afterwards."""
    target = tmp_path / "disk"
    target.mkdir()
    if os.geteuid() != 0:
        reason = "mounting a tmpfs needs root; this test fills a real disk"
        print(f"skipped: {reason}")
        pytest.skip(reason)
    mounted = _mount(target, DISK_SIZE)
    if mounted.returncode != 0:
        reason = f"cannot mount a tmpfs here ({(mounted.stderr or mounted.stdout).strip()})"
        print(f"skipped: {reason}")
        pytest.skip(reason)

    def resize(size: str) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(target)], check=True, capture_output=True)

    try:
        yield target, resize
    finally:
        if subprocess.run(["umount", str(target)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(target)], capture_output=True)  # busy: detach it anyway


async def _app_shows_the_failure(runs_dir: Path, run: Path, reason: str) -> None:
    from ..app.test_app import header_text, wait_until

    app = make_app(runs_dir)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        await wait_until(pilot, lambda: len(screen.runs) == 1)
        entry = screen.runs[0]
        assert entry.status == Status.FAILED and entry.exit_reason == reason
        assert "crash_disk_full" in [a.rule for a in entry.alerts]
        row = " ".join(str(cell) for cell in screen.query_one("#runs").get_row_at(0))
        assert "failed" in row and "crash_disk_full" in row
    app = make_app(runs_dir, start="watch", watch=run)
    async with app.run_test(size=(120, 30)) as pilot:
        monitor = app.screen
        assert isinstance(monitor, MonitorScreen)
        await wait_until(
            pilot, lambda: monitor.status == "failed" and "crash_disk_full" in [w.rule for w in monitor._all_warnings()]
        )
        assert "FAILED" in header_text(monitor)
        crash = next(w for w in monitor._all_warnings() if w.rule == "crash_disk_full")
        assert "Free space" in crash.advice and crash.severity is Severity.CRITICAL


async def test_a_full_disk_fails_the_run_with_its_cause_and_a_resume_continues(tiny_model, small_disk):
    disk, resize = small_disk
    runs_dir = disk / "runs"
    args = pattern_args(tiny_model, runs_dir, "--save-steps", "1", "--max-steps", "12")

    refused = cli(*args)  # 12 checkpoints of ~1.3 MiB cannot fit in 6 MiB: refused with the numbers
    assert refused.returncode == 2, refused.stderr
    assert "cannot finish" in refused.stderr and "MiB free" in refused.stderr and str(disk) in refused.stderr
    assert "disk_check=0" in refused.stderr
    assert not runs_dir.exists() or not any(runs_dir.iterdir())

    result = cli(*args, "--health", "disk_check=0")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "warning: disk:" in result.stderr
    run = only_run(runs_dir)
    state = json.loads((run / "state.json").read_text())
    reason = state["exit_reason"]
    assert state["status"] == "failed" and state["ended"]
    assert reason.startswith("disk_full (ENOSPC): no space left on the filesystem") and str(disk) in reason
    assert "writing checkpoints/checkpoint-" in reason and "free of 6.0 MiB" in reason

    events = events_of(run)  # every line parses: the failed writes left no torn line behind
    [error] = [e for e in events if isinstance(e, Error)]
    assert error.kind == "disk_full" and error.message == reason and "Traceback" in error.traceback
    assert error.extra["path"].startswith("checkpoints/checkpoint-") and error.extra["filesystem"] == str(disk)
    last = error.extra["last_checkpoint"]
    assert last and last in reason
    [finished] = [e for e in events if isinstance(e, RunFinished)]
    assert finished.status == Status.FAILED and finished.reason == reason and events[-1] == finished
    steps = [e.step for e in events if isinstance(e, Metrics)]
    assert steps == list(range(1, finished.step + 1)) and 2 <= finished.step < 12
    saved = [e.step for e in events if isinstance(e, Checkpoint)]
    assert saved == list(range(1, int(last.rsplit("-", 1)[1]) + 1))
    estimate = next(e for e in events if isinstance(e, HealthWarning) and e.rule == "disk_estimate")
    assert estimate.severity is Severity.CRITICAL and estimate.evidence["estimated_bytes"] > 6 * 2**20
    assert "Traceback" in (run / "trainer.log").read_text()  # the reserve left room for it
    assert not (run / ".reserve").exists()

    listed = cli("runs", "--runs-dir", str(runs_dir), "--json")
    [row] = json.loads(listed.stdout)
    assert row["status"] == "failed" and row["exit_reason"] == reason
    [alert] = [a for a in row["alerts"] if a["rule"] == "crash_disk_full"]
    assert alert["evidence"]["last_checkpoint"] == last and alert["evidence"]["free_bytes"] == 0

    await _app_shows_the_failure(runs_dir, run, reason)

    resize("64M")
    from_step = int(last.rsplit("-", 1)[1])
    resumed = cli("train", "--resume", run.name, "--runs-dir", str(runs_dir), "--max-steps", str(finished.step + 2))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = events_of(run)
    starts = [e for e in events if isinstance(e, RunStarted)]
    assert len(starts) == 2 and starts[-1].resumed_from == last
    after = [e.step for e in events[events.index(starts[-1]) :] if isinstance(e, Metrics)]
    assert after == list(range(from_step + 1, finished.step + 3))
    assert json.loads((run / "state.json").read_text())["status"] == "completed"


def _fill(disk: Path, percent: float) -> None:
    """Grow a ballast file until the filesystem is at least ``percent`` used."""
    with open(disk / "ballast", "ab", buffering=0) as fh:
        while usage(disk).percent_used < percent:
            try:
                fh.write(b"\0" * 16 * 1024)
            except OSError:  # full
                return


def test_the_watcher_warns_as_the_disk_fills_and_names_a_full_disk_for_a_lost_run(small_disk):
    disk, _ = small_disk
    folder = RunFolder.create(disk / "runs")
    folder.initial_state()  # this test's own process stands in for a live trainer
    folder.write_state(status=Status.RUNNING)
    assert [w.rule for w in watcher_warnings(folder, Status.RUNNING)] == []
    _fill(disk, 91)
    [warn] = watcher_warnings(folder, Status.RUNNING)
    assert warn.rule == "disk_space" and warn.severity is Severity.WARN and str(disk) in warn.message
    _fill(disk, 98)
    [critical] = watcher_warnings(folder, Status.RUNNING)
    assert critical.severity is Severity.CRITICAL and critical.evidence["percent_used"] >= 97
    quiet = watcher_warnings(
        folder, Status.RUNNING, config={"health": {"disk_warn_percent": 99.9, "disk_critical_percent": 99.9}}
    )
    assert quiet == []
    _fill(disk, 100)
    [lost] = watcher_warnings(folder, Status.LOST)  # gone without a word, on a full disk
    assert lost.rule == "crash_disk_full" and lost.evidence["inferred"] is True


def test_an_event_that_does_not_fit_leaves_the_stream_intact(small_disk):
    disk, resize = small_disk
    path = disk / "events.jsonl"
    writer = EventWriter(path)
    writer.emit(RunStarted(run_id="r"))
    _fill(disk, 100)
    with pytest.raises(OSError) as failed:  # larger than what is left of the file's last page: a short write
        for step in range(1, 50):
            writer.emit(Metrics(step=step, values={"blob": "x" * 20000}))
    assert failed.value.errno == errno.ENOSPC and failed.value.filename == str(path)
    assert path.read_bytes().endswith(b"\n")
    resize("8M")
    writer.emit(Metrics(step=99, values={"reward": 1.0}))
    writer.close()
    tail = EventTail(path)
    events = tail.poll()
    assert tail.bad_lines == 0 and events[0].type == "run_started" and events[-1].step == 99


def test_the_root_process_records_a_trainer_that_died_on_a_full_disk(small_disk):
    from trainer_core.contract.config.placement import Placement
    from trainer_core.contract.run.disk import make_reserve
    from trainer_core.root.run_root import RunRoot

    disk, _ = small_disk
    folder = RunFolder.create(disk / "runs")
    folder.initial_state()
    folder.write_state(status=Status.RUNNING)
    with EventWriter(folder.events_file) as writer:
        writer.emit(RunStarted(run_id=folder.run_id))
        writer.emit(Metrics(step=1, values={"reward": 0.5}))
    assert make_reserve(folder.path)
    _fill(disk, 100)  # the trainer's last writes failed; it exited 1 with nothing recorded, an empty log
    RunRoot(folder, Placement())._record_trainer_exit(1)
    state = folder.read_state()
    assert state["status"] == "failed" and state["exit_reason"].startswith("disk_full (ENOSPC)")
    assert "exited with code 1" in state["exit_reason"] and str(disk) in state["exit_reason"]
    events = events_of(folder.path)
    assert [e.type for e in events] == ["run_started", "metrics", "error", "run_finished"]
    assert events[2].kind == "disk_full" and events[2].extra["inferred"] is True
    assert not (folder.path / ".reserve").exists()
