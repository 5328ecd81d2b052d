"""``stop`` signals only the run's own processes: a state.json that names another process, with that process's
true start time (so the pid + start-time check alone would pass), gets a refusal that says why, never a signal.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import RUN_MARKER, process_start_time

from ..helpers import cli, wait_for


def start_sleeper(marker: str | None = None) -> subprocess.Popen:
    """A real process that is not a run's: ``sleep 300`` without the marker (or with ``marker`` as its value)."""
    env = {k: v for k, v in os.environ.items() if k != RUN_MARKER}
    if marker is not None:
        env[RUN_MARKER] = marker
    proc = subprocess.Popen(["sleep", "300"], env=env, start_new_session=True)
    wait_for(lambda: process_start_time(proc.pid) is not None, timeout=10)
    return proc


def planted_run(runs_dir, pid: int, folder: RunFolder | None = None) -> RunFolder:
    """A run folder whose state.json says it is running as ``pid``, with ``pid``'s real start time."""
    folder = folder or RunFolder.create(runs_dir)
    folder.config_file.write_text("project_name: p\nmodel: m\nmax_steps: 10\n")
    start = process_start_time(pid)
    folder.write_state(
        run_id=folder.run_id,
        status="running",
        pid=pid,
        pid_start_time=start,
        root_pid=pid,
        root_start_time=start,
        started=time.time() - 60,
    )
    return folder


@pytest.fixture
def sleepers():
    started: list[subprocess.Popen] = []
    yield lambda marker=None: started.append(start_sleeper(marker)) or started[-1]
    for proc in started:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("flags", [[], ["--force"]], ids=["graceful", "force"])
def test_a_planted_state_naming_a_foreign_process_is_refused(runs_dir, sleepers, flags):
    foreign = sleepers()
    folder = planted_run(runs_dir, foreign.pid)
    result = cli("stop", folder.run_id, "--runs-dir", str(runs_dir), "--timeout", "5", *flags, timeout=60)
    time.sleep(0.5)  # a signal sent would have landed by now
    assert foreign.poll() is None, result.stdout + result.stderr
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"Process {foreign.pid} (state.json's root_pid) was not signalled" in result.stdout
    assert f"it does not carry the run's marker ({RUN_MARKER} is not in its environment)" in result.stdout
    assert "nothing was signalled" in result.stdout
    assert not folder.stop_file.exists()  # nothing was asked of a run that is not there
    assert folder.read_state()["status"] == "running"  # and nothing written on its behalf


def test_the_json_outcome_names_the_refusal_on_stdout_and_stderr(runs_dir, sleepers):
    foreign = sleepers()
    folder = planted_run(runs_dir, foreign.pid)
    result = cli("stop", folder.run_id, "--runs-dir", str(runs_dir), "--force", "--json", timeout=60)
    assert foreign.poll() is None and result.returncode == 1
    outcome = json.loads(result.stdout)
    assert outcome["was_running"] is False and outcome["forced"] == [] and len(outcome["refused"]) == 1
    assert str(foreign.pid) in outcome["refused"][0] and RUN_MARKER in outcome["refused"][0]
    assert result.stderr.startswith("error: ") and str(foreign.pid) in result.stderr  # what a remote caller shows


def test_a_process_marked_for_another_run_is_not_this_runs(runs_dir, sleepers):
    other = RunFolder.create(runs_dir)
    foreign = sleepers(str(other.path.resolve()))
    folder = planted_run(runs_dir, foreign.pid)
    for flags in ([], ["--force"]):
        result = cli("stop", folder.run_id, "--runs-dir", str(runs_dir), "--timeout", "5", *flags, timeout=60)
        time.sleep(0.5)  # not a wait: a signal sent would have landed by now
        assert foreign.poll() is None and result.returncode == 1, result.stdout + result.stderr
        assert f"Process {foreign.pid}" in result.stdout
        assert f"its marker {RUN_MARKER} names another run folder ({other.path.resolve()})" in result.stdout


def test_a_recorded_process_that_carries_the_runs_marker_is_stopped(runs_dir, sleepers):
    folder = RunFolder.create(runs_dir)
    ours = sleepers(str(folder.path.resolve()))
    planted_run(runs_dir, ours.pid, folder)
    result = cli("stop", folder.run_id, "--runs-dir", str(runs_dir), "--force", timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "forced to stop (1 process(es) signalled)" in result.stdout and "was not signalled" not in result.stdout
    wait_for(lambda: ours.poll() is not None, timeout=10)
    assert folder.read_state()["status"] == "stopped"
