"""Small hardenings, each against what a planted or half-written file could otherwise do: config.yaml replaced
atomically, the backlog child blind to the working folder, a private SSH control folder that is no link, Slurm
job ids checked before any Slurm command, a hosts file others may write refused, and the run marker check
behind ``stop`` (the rest of it, with real processes, is tests/integration/test_stop_foreign.py)."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

import trainer_core.contract.run.folder as run_folder_module
import trainer_core.contract.run.process as process_module
import trainer_core.contract.run.slurm_job as slurm_job
from grpo_tui.executors import hosts as hosts_module
from grpo_tui.executors.hosts import HostError, load_hosts
from grpo_tui.executors.ssh_connection import control_dir
from grpo_tui.services.lifecycle import slurm_stop
from grpo_tui.services.lifecycle.supervisor import stop_run
from grpo_tui.services.slurm import batch as slurm_executor
from grpo_tui.services.slurm import queue as slurm_queue
from grpo_tui.services.stream import backlog as backlog_module
from grpo_tui.services.stream.backlog import Backlog
from trainer_core.contract.config.placement import Placement
from trainer_core.contract.config.resume_plan import ResumePlan, apply_resume
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.checkpoints import CheckpointCheck
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import Metrics, RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import RUN_MARKER, foreign_reason, owned, process_start_time
from trainer_core.contract.run.status import Status


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def full_disk(monkeypatch) -> None:
    """Every atomic write fails after its data went to the temporary file, before it replaces the old one."""

    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(run_folder_module.os, "fsync", fsync)


# -- config.yaml -----------------------------------------------------------------------------------------------


def test_a_config_write_that_fails_leaves_the_old_config_and_no_temp_file(tmp_path, monkeypatch):
    folder = RunFolder.create(tmp_path / "runs")
    folder.save_config(RunConfig(model="old/model", max_steps=5))
    before = folder.config_file.read_bytes()
    assert folder.config_file.stat().st_mode & 0o777 == 0o600
    assert RunConfig.load(folder.config_file).model == "old/model"
    full_disk(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        folder.save_config(RunConfig(model="new/model", max_steps=9))
    assert folder.config_file.read_bytes() == before and leftovers(folder.path) == []


def test_a_resume_whose_config_write_fails_leaves_config_and_state_as_they_were(tmp_path, monkeypatch):
    folder = RunFolder.create(tmp_path / "runs", "run")
    folder.save_config(RunConfig(model="m", max_steps=5))
    folder.write_state(run_id="run", status=Status.STARTING)
    folder.write_state(status=Status.STOPPED, last_step=5, exit_reason="why", ended=1.0)
    before = (folder.config_file.read_bytes(), folder.state_file.read_bytes())
    plan = ResumePlan("run", Status.STOPPED, 5, CheckpointCheck(folder.checkpoints_dir / "checkpoint-4", 4), 9)
    full_disk(monkeypatch)
    with pytest.raises(ConfigError, match=r"No space left on device.*left as it was"):
        apply_resume(folder, plan, RunConfig(model="m", max_steps=9))
    assert (folder.config_file.read_bytes(), folder.state_file.read_bytes()) == before
    assert leftovers(folder.path) == []


# -- the backlog child -----------------------------------------------------------------------------------------


PLANTED = ("orjson", "trainer_core", "grpo_tui", "psutil", "yaml")


@pytest.mark.parametrize("safe_path", [backlog_module.SAFE_PATH, []], ids=["this-python", "python-3.10-no-P"])
def test_the_backlog_child_never_imports_a_module_planted_in_the_working_folder(tmp_path, monkeypatch, safe_path):
    folder = RunFolder.create(tmp_path / "runs")
    with EventWriter(folder.events_file) as events:
        events.emit(RunStarted(run_id=folder.run_id, pid=1, max_steps=3))
        for step in (1, 2, 3):
            events.emit(Metrics(step=step, values={"reward": step / 3}))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    sentinel = tmp_path / "imported"
    for name in PLANTED:
        (cwd / f"{name}.py").write_text(f"open({str(sentinel)!r}, 'a').write({name!r} + '\\n')\n")
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(backlog_module, "SAFE_PATH", safe_path)  # 3.10 has no -P: the safe cwd alone protects it
    relative = RunFolder(Path(os.path.relpath(folder.path, cwd)))  # the child is handed an absolute path
    backlog = Backlog(relative, min_bytes=1)
    assert backlog.proc is not None and ("-P" in backlog.command()) == bool(safe_path)
    stream = backlog.stream()
    assert not sentinel.exists(), sentinel.read_text()
    assert backlog.in_child and list(stream.steps) == [1, 2, 3] and stream.folder is relative
    # a Python with the working folder on its path runs them: the test plants what it claims to
    subprocess.run([sys.executable, "-c", "import orjson"], cwd=cwd, capture_output=True, timeout=60)
    assert sentinel.read_text() == "orjson\n"


# -- the SSH control folder ------------------------------------------------------------------------------------


@pytest.fixture
def short_tmp():
    path = Path(tempfile.mkdtemp(prefix="gu", dir="/tmp"))  # a socket path must stay short
    yield path
    shutil.rmtree(path)


def test_the_control_folder_may_not_be_a_link_a_file_or_someone_elses(short_tmp, monkeypatch):
    theirs = short_tmp / "theirs"
    theirs.mkdir(mode=0o700)
    link = short_tmp / "ssh"
    link.symlink_to(theirs)
    monkeypatch.setenv("GRPO_TUI_SSH_DIR", str(link))
    with pytest.raises(HostError, match=f"the SSH control folder {link} is a symbolic link.*rm {link}"):
        control_dir()
    link.unlink()
    link.write_text("")
    with pytest.raises(HostError, match="is not a folder"):
        control_dir()
    link.unlink()
    assert control_dir() == link and link.stat().st_mode & 0o777 == 0o700  # made fresh, private
    link.chmod(0o711)
    with pytest.raises(HostError, match=r"must be yours and private \(mode 711, not 700\): chmod 700"):
        control_dir()
    link.chmod(0o700)
    if os.getuid() == 0:
        os.chown(link, 4242, 4242)
    else:
        monkeypatch.setattr(os, "getuid", lambda: os.geteuid() + 4242)
    with pytest.raises(HostError, match=r"belongs to uid .*not to you.*set \$GRPO_TUI_SSH_DIR"):
        control_dir()


def test_the_tmp_fallback_refuses_a_link_planted_in_its_place(short_tmp, monkeypatch):
    monkeypatch.delenv("GRPO_TUI_SSH_DIR", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/" + "c" * 80)  # too long for a socket: the /tmp fallback is used
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(short_tmp))
    target = short_tmp / "attacker"
    target.mkdir(mode=0o700)
    (short_tmp / f"grpo-tui-ssh-{os.getuid()}").symlink_to(target)
    with pytest.raises(HostError, match="is a symbolic link"):
        control_dir()
    assert list(target.iterdir()) == []


# -- Slurm job ids ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("job", ["1", "123", "123_4"])
def test_a_job_id_is_digits_or_an_array_task(job):
    assert slurm_job.valid_job_id(job) and slurm_job.check_job_id(job, "r") == job


@pytest.mark.parametrize("job", ["", "--me", "-u", "12 3", "123\n", "123_", "_4", "1.2", "123;x", "١٢٣", 123, None])
def test_anything_else_is_not(job):
    assert not slurm_job.valid_job_id(job)
    with pytest.raises(slurm_job.SlurmJobError, match=re.escape(f"run r1: the Slurm job id {job!r} is not a job id")):
        slurm_job.check_job_id(job, "r1")


@pytest.fixture
def commands(monkeypatch) -> list[list[str]]:
    """Every Slurm command the services would run, recorded instead of run."""
    ran: list[list[str]] = []

    def run(argv, **kwargs):
        ran.append(list(argv))
        return subprocess.CompletedProcess(argv, 1, "", "")

    monkeypatch.setattr(subprocess, "run", run)  # the module slurm_stop, slurm_queue and slurm_job call
    slurm_queue.QUEUE.forget()
    yield ran
    slurm_queue.QUEUE.forget()


def test_a_planted_job_id_stops_nothing_and_runs_no_command(tmp_path, commands):
    folder = RunFolder.create(tmp_path / "runs")
    folder.write_state(run_id=folder.run_id, status=Status.QUEUED, slurm_job_id="--me")
    commands.clear()  # squeue may have been asked for the queue: it is never given the job id
    report = stop_run(folder, force=True, timeout=1)
    assert report.failed and not report.was_running
    assert f"run {folder.run_id}: the Slurm job id '--me' is not a job id" in report.message
    assert not [argv for argv in commands if argv[0] != "squeue"] and folder.status() is Status.QUEUED
    with pytest.raises(slurm_job.SlurmJobError, match=folder.run_id):
        slurm_stop.stop_job(folder, "--me", True, 1)
    with pytest.raises(slurm_job.SlurmJobError, match="'-u' is not a job id"):
        slurm_queue._scontrol("-u")
    assert slurm_queue.QUEUE.ended("--me") is None  # a status read: unknown
    with pytest.raises(slurm_job.SlurmJobError, match=r"check \$SLURM_JOB_ID"):
        slurm_job.job_end_time("--me", env={})
    assert not [argv for argv in commands if argv[0] != "squeue"]
    slurm_job.job_end_time("42", env={})
    assert commands[-1] == ["scontrol", "show", "job", "-o", "42"]


def test_sbatch_output_that_is_not_a_job_id_is_not_recorded(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text("#!/bin/sh\necho '--me;cluster'\n")
    sbatch.chmod(0o755)
    folder = RunFolder.create(tmp_path / "runs")
    folder.write_state(run_id=folder.run_id, status=Status.QUEUED)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    with pytest.raises(ConfigError, match=f"run {folder.run_id}: sbatch --parsable printed '--me', not a Slurm job id"):
        slurm_executor.submit(folder, RunConfig(model="m"), Placement(), env=env)
    state = folder.read_state()
    assert "slurm_job_id" not in state and state["status"] == "failed"


# -- the hosts file --------------------------------------------------------------------------------------------


def hosts_file(tmp_path, mode: int) -> Path:
    path = tmp_path / "hosts.yaml"
    path.write_text("gpubox:\n  command: /opt/venv/bin/grpo-tui\n")
    path.chmod(mode)
    return path


@pytest.mark.parametrize("mode", [0o600, 0o644, 0o400])
def test_a_hosts_file_only_its_owner_writes_is_read(tmp_path, mode):
    assert load_hosts(hosts_file(tmp_path, mode))["gpubox"].command == "/opt/venv/bin/grpo-tui"


@pytest.mark.parametrize("mode", [0o664, 0o646, 0o666, 0o620])
def test_a_hosts_file_others_may_write_is_refused_like_ssh_config(tmp_path, mode):
    path = hosts_file(tmp_path, mode)
    with pytest.raises(HostError) as refused:
        load_hosts(path)
    message = str(refused.value)
    assert message.startswith(f"Bad owner or permissions on {path}: mode {mode:o}")
    assert message.endswith(f"fix: chmod go-w {path}")


def test_a_hosts_file_of_another_user_is_refused(tmp_path, monkeypatch):
    path = hosts_file(tmp_path, 0o644)
    if os.getuid() == 0:
        os.chown(path, 4242, 4242)
    else:
        monkeypatch.setattr(hosts_module.os, "getuid", lambda: os.geteuid() + 4242)
    with pytest.raises(HostError, match=f"Bad owner or permissions on {path}: it belongs to uid "):
        load_hosts(path)


def test_a_hosts_file_owned_by_root_and_dev_null_are_read(tmp_path, monkeypatch):
    root = os.geteuid() == 0
    monkeypatch.setattr(hosts_module.os, "getuid", lambda: 4242)
    if root:
        os.chown(hosts_file(tmp_path, 0o644), 0, 0)
        assert "gpubox" in load_hosts(tmp_path / "hosts.yaml")
    assert load_hosts(Path(os.devnull)) == {}


# -- the run marker --------------------------------------------------------------------------------------------


def test_a_process_whose_environment_cannot_be_read_is_not_the_runs(tmp_path, monkeypatch):
    me = psutil.Process()

    def denied(self):
        raise psutil.AccessDenied(self.pid)

    monkeypatch.setattr(process_module.psutil.Process, "environ", denied)
    reason = foreign_reason(me, tmp_path)
    assert reason is not None and "cannot be read" in reason and RUN_MARKER in reason
    proc, refusal = owned(me.pid, process_start_time(me.pid), tmp_path, "root_pid")
    assert proc is None and refusal is not None and refusal.pid == me.pid
    assert refusal.describe().startswith(f"Process {me.pid} (state.json's root_pid) was not signalled: its environment")


def test_owned_needs_the_start_time_and_the_marker_of_this_run(tmp_path, monkeypatch):
    me = psutil.Process()
    start = process_start_time(me.pid)
    monkeypatch.setattr(process_module.psutil.Process, "environ", lambda self: {RUN_MARKER: str(tmp_path.resolve())})
    assert owned(me.pid, start, tmp_path)[0] is not None
    assert owned(me.pid, start - 100, tmp_path) == (None, None)  # a reused pid: gone, nothing to refuse
    other = tmp_path / "other"
    proc, refusal = owned(me.pid, start, other)
    assert proc is None and f"names another run folder ({tmp_path.resolve()}), not {other.resolve()}" in refusal.reason
