"""Start runs detached, stop them completely, and never touch a process that is not theirs.

A run's root process (``python -m trainer_core run``) is started in a session of its own with stdin from
/dev/null and its output in the run folder, so a closed terminal, an SSH hang-up or the death of whoever
launched it cannot reach it. Stopping is graceful first (the trainer finishes the step and saves a
checkpoint), then TERM and KILL to everything the run started, collected before the first signal, and
finally a check that nothing is left. A process state.json names is the run's only if it also carries the
run's marker (``trainer_core.contract.run.process.owned``): a planted or stale state.json that names another
process, even with its true start time, gets a refusal that says why, never a signal.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from grpo_tui.services.catalog.status import live_status
from grpo_tui.services.lifecycle.slurm_stop import stop_job
from grpo_tui.services.lifecycle.stop_request import request_stop, stopped
from grpo_tui.services.machine.gpus import visible_indices
from grpo_tui.services.records.stop_outcome import StopOutcome
from grpo_tui.services.slurm.queue import job_of
from trainer_core.contract.config.disk_estimate import require_room
from trainer_core.contract.config.model_source import require_model
from trainer_core.contract.config.notify_urls import NOTIFY_ENV, NOTIFY_FD_ENV
from trainer_core.contract.config.placement import Placement, plan
from trainer_core.contract.config.ports import check_port
from trainer_core.contract.config.resume_plan import ResumeChange, ResumePlan, apply_resume, choose_checkpoint
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.event_log import last_step
from trainer_core.contract.run.folder import RunFolder, resolve_runs_dir
from trainer_core.contract.run.json_values import is_whole
from trainer_core.contract.run.process import (
    Refusal,
    alive,
    collect,
    owned,
    process_start_time,
    run_env,
    spawn_logged,
    terminate,
)
from trainer_core.contract.run.slurm_job import SlurmJobError
from trainer_core.contract.run.status import Status

DEFAULT_STOP_TIMEOUT = 300.0
RESUME_WAIT_S = 30.0


def create_run(
    config: RunConfig,
    runs_dir=None,
    *,
    gpus: list[int] | None = None,
    num_processes: int | None = None,
    vllm_port: int | None = None,
    on_disk_note=None,
    available: list[int] | None = None,
    status: Status = Status.STARTING,
) -> tuple[RunFolder, Placement]:
    """Validate everything (the model too: config/model_source.py), then create the run folder. Raises
    ConfigError / OSError before anything starts.

    The disk check (config/disk_estimate.py) refuses a run its filesystem cannot hold; ``on_disk_note(Preflight)``
    hears of one that fits only barely, starts anyway (``--health disk_check=0``) or cannot be estimated. The
    trainer records the first two as a ``disk_estimate`` warning once the run exists."""
    # ``available``: the GPUs of the machine that will run it (a Slurm node), when that is not this one
    placement = plan(config, visible_indices() if available is None else available, gpus, num_processes)
    config.validate(world_size=world_size(config, placement))
    require_model(config.model)  # a folder or a Hub id this machine can load: not transformers' traceback later
    if vllm_port is not None and placement.starts_server:
        check_port(vllm_port)
    room = require_room(config, resolve_runs_dir(runs_dir))
    if room.verdict != "ok" and on_disk_note is not None:
        on_disk_note(room)
    folder = RunFolder.create(runs_dir)
    folder.save_config(config)
    folder.write_state(run_id=folder.run_id, status=status, started=round(time.time(), 3))
    return folder, placement


def world_size(config: RunConfig, placement: Placement) -> int:
    """Training processes over every machine: a Slurm run's nodes each run the placement's processes."""
    nodes = config.slurm.get("nodes") if isinstance(config.slurm, dict) else None
    return placement.total_processes * (nodes if is_whole(nodes, 2) else 1)


@dataclass
class LaunchOptions:
    """How the root process runs the trainer, beyond the RunConfig and the placement."""

    accelerate_config: str | None = None
    vllm_port: int | None = None
    vllm_timeout: float | None = None


def root_command(folder: RunFolder, placement: Placement, options: LaunchOptions | None = None) -> list[str]:
    options = options or LaunchOptions()
    cmd = [
        sys.executable,
        "-m",
        "trainer_core",
        "run",
        str(folder.path),
        "--placement",
        json.dumps(placement.to_dict()),
    ]
    if options.accelerate_config:
        cmd += ["--accelerate-config", str(Path(options.accelerate_config).resolve())]
    if options.vllm_port:
        cmd += ["--vllm-port", str(options.vllm_port)]
    if options.vllm_timeout:
        cmd += ["--vllm-timeout", str(options.vllm_timeout)]
    return cmd


def start_root(folder: RunFolder, placement: Placement, options: LaunchOptions | None = None) -> subprocess.Popen:
    """The run's root, detached: in a process group of its own, in the launcher's session. Its command line and environment carry no notify URL: it reads the run
    folder's private notify.json (``$GRPO_TUI_NOTIFY`` is the launcher's, and is not passed on)."""
    cmd = root_command(folder, placement, options)
    env = {k: v for k, v in run_env(folder.path).items() if k not in (NOTIFY_ENV, NOTIFY_FD_ENV)}
    proc = spawn_logged(cmd, folder.log_file, env, own_group=True)  # not a new session: process.detached_group
    folder.write_state(root_pid=proc.pid, root_start_time=process_start_time(proc.pid))
    return proc


def run_processes(folder: RunFolder) -> list[psutil.Process]:
    """Every live process of the run, identity-checked: the recorded roots, their trees, marked strays."""
    return _run_processes(folder)[0]


def _run_processes(folder: RunFolder) -> tuple[list[psutil.Process], list[Refusal]]:
    """``run_processes`` and the recorded processes refused as not the run's (alive, right start time, no marker)."""
    state = folder.read_state()
    roots, refused = [], []
    for role, start in (("root_pid", "root_start_time"), ("pid", "pid_start_time")):
        proc, refusal = owned(state.get(role), state.get(start), folder.path, role)
        if proc is not None:
            roots.append(proc)
        elif refusal is not None and all(r.pid != refusal.pid for r in refused):  # root_pid and pid may be one
            refused.append(refusal)
    return collect(folder.path, roots), refused


def stop_run(
    folder: RunFolder,
    *,
    force: bool = False,
    timeout: float = DEFAULT_STOP_TIMEOUT,
    grace: float = 10.0,
    on_wait=None,
    by: str | None = None,
) -> StopOutcome:
    """Stop a run: graceful (unless ``force``) for up to ``timeout`` s, then TERM+KILL everything left; ``by``
    (who asked: the CLI, the app, the app on another machine) is written in the stop request. A state.json read
    with problems (run/state.py) is said in the outcome's message; the run's marked processes are found all
    the same."""
    state = folder.read_state()
    notes = [f"Note: {p}." for p in state.problems]
    job = job_of(state)
    if job is not None:
        try:
            return stop_job(folder, job, force, timeout, on_wait, notes, by)
        except SlurmJobError as exc:  # raised before any Slurm command
            return StopOutcome.of(folder.run_id, was_running=False, refused=[f"{exc}."], said=f"{exc}.", notes=notes)
    procs, refusals = _run_processes(folder)
    refused = [r.describe() for r in refusals]
    if not procs:
        return StopOutcome.of(
            folder.run_id, was_running=False, status=live_status(folder), refused=refused, notes=notes
        )
    graceful, forced, left = False, [], []
    if not force:
        request_stop(folder, by)
        target = procs[0]
        try:
            target.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
        deadline = time.monotonic() + timeout
        while alive(procs) and time.monotonic() < deadline:
            if on_wait:
                on_wait(deadline - time.monotonic())
            psutil.wait_procs(alive(procs), timeout=min(1.0, max(deadline - time.monotonic(), 0.01)))
        graceful = not alive(procs)
    if not graceful:
        procs = list({p.pid: p for p in [*procs, *_run_processes(folder)[0]]}.values())
        forced = [p.pid for p in alive(procs)]
        left = [p.pid for p in terminate(procs, grace=grace)]
        _record_forced_end(folder)
    return stopped(folder, graceful, forced, left, notes, refused)


def _record_forced_end(folder: RunFolder) -> None:
    status = folder.status()
    if status is not None and status.is_final:
        return
    folder.record_end(
        Status.STOPPED, "killed by grpo-tui stop after the graceful stop did not finish", last_step(folder.events_file)
    )


def _exited(folder: RunFolder, timeout: float) -> bool:
    """Wait up to ``timeout`` s for every process of the run to exit (a run records its end a moment before)."""
    deadline = time.monotonic() + timeout
    while run_processes(folder):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def plan_resume(
    folder: RunFolder,
    *,
    max_steps: int | None = None,
    gpus: list[int] | None = None,
    num_processes: int | None = None,
    checkpoint: str | None = None,
    change: ResumeChange | None = None,
    available: list[int] | None = None,
) -> ResumePlan:
    """Make an ended (or lost) run ready to continue from its newest complete checkpoint, in the same folder;
    ``change``: the settings it changes (resuming.py) and who asked; ``available``: the GPUs of the machine that
    will run it, when that is not this one (a Slurm node).

    The new steps append to the same events.jsonl (step numbers continue from the checkpoint) and the state
    records which checkpoint the run resumed from, which restart this is and what the run was before. A
    completed run continues only to a higher ``max_steps``. Incomplete checkpoints are moved aside and
    named in the plan's ``message``. Raises ConfigError with what is wrong and what to do, before writing.
    """
    status = live_status(folder)
    if status.is_final and not _exited(folder, RESUME_WAIT_S):
        raise ConfigError(
            "resume",
            f"run {folder.run_id} is {status}, but its processes are still exiting after "
            f"{RESUME_WAIT_S:.0f}s; wait for them (or `grpo-tui stop {folder.run_id} --force`), then resume.",
        )
    if not status.resumable:
        hint = "stop it first" if status.is_live else "start a new run"
        raise ConfigError(
            "resume", f"run {folder.run_id} is {status}; only an ended or lost run can be resumed: {hint}."
        )
    resume, config = choose_checkpoint(folder, status, max_steps, checkpoint, change)
    resume.placement = plan(config, visible_indices() if available is None else available, gpus, num_processes)
    config.validate(world_size=world_size(config, resume.placement))
    apply_resume(folder, resume, config)
    return resume


def prepare_resume(
    folder: RunFolder, *, max_steps: int | None = None, gpus: list[int] | None = None, num_processes: int | None = None
) -> Placement:
    """``plan_resume`` for callers that need only the placement."""
    placement = plan_resume(folder, max_steps=max_steps, gpus=gpus, num_processes=num_processes).placement
    assert placement is not None  # plan_resume has placed it
    return placement
