"""What a run inside a Slurm job knows of its job: which restart this is, and why it is being stopped.

A batch job gets SIGTERM before its time limit (``--signal=B:TERM@GRACE``), when it is preempted or
requeued, and when it is cancelled. The root process tells the first two apart by the job's end time,
recorded when the job starts (``SLURM_JOB_END_TIME``, else ``scontrol show job``): a TERM within the grace
of the end is the time limit, any other is a preemption (or a requeue), and a stop the user asked for
through grpo-tui has already written its own reason.

A job id read from a run folder or from a command's output is checked (``check_job_id``) before it is
passed to ``scontrol``, ``scancel`` or ``squeue``: a state.json saying ``slurm_job_id: "--me"`` would
otherwise make ``scancel`` cancel every job of the user.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from trainer_core.contract.run.folder import RunFolder

JOB_ID_ENV = "SLURM_JOB_ID"
RESTART_ENV = "SLURM_RESTART_COUNT"
END_TIME_ENV = "SLURM_JOB_END_TIME"
GRACE_ENV = "GRPO_TUI_SLURM_GRACE"
TIME_LIMIT, PREEMPTED = "time_limit", "preempted"
SLACK_S = 30.0  # the limit's signal arrives about GRACE before the end; allow for scheduler latency
# a job (123) or an array task (123_4); ASCII digits only (``\d`` alone also matches other scripts' digits)
JOB_ID = re.compile(r"\d+(_\d+)?", re.ASCII)


class SlurmJobError(ValueError):
    """A Slurm job id that is not one: nothing is run with it."""


def valid_job_id(job) -> bool:
    return isinstance(job, str) and JOB_ID.fullmatch(job) is not None


def check_job_id(job, run: str | None = None, source: str = "slurm_job_id in the run's state.json") -> str:
    """``job`` if it is a Slurm job id (``123``, or ``123_4`` for an array task); else SlurmJobError naming it,
    the run and where the id came from."""
    if valid_job_id(job):
        return job
    where = f"run {run}: " if run else ""
    raise SlurmJobError(
        f"{where}the Slurm job id {job!r} is not a job id (digits, or digits_digits for an array "
        f"task), so no Slurm command is run with it; check {source} (`squeue --me` lists your jobs)"
    )


def job_id(env: dict | None = None) -> str | None:
    return (os.environ if env is None else env).get(JOB_ID_ENV) or None


def restart_count(env: dict | None = None) -> int:
    try:
        return max(0, int((os.environ if env is None else env).get(RESTART_ENV) or 0))
    except ValueError:
        return 0


def job_end_time(job: str, env: Mapping[str, str] | None = None) -> float | None:
    """The job's end (its time limit) in unix seconds; None when unlimited or unknown. SlurmJobError for a
    ``job`` that is not a job id, when ``scontrol`` would be asked."""
    env = os.environ if env is None else env
    try:
        return float(env[END_TIME_ENV])
    except (KeyError, ValueError):
        pass
    check_job_id(job, source=f"${JOB_ID_ENV}")
    try:
        out = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for word in out.split():
        if word.startswith("EndTime="):
            try:
                return time.mktime(time.strptime(word[8:], "%Y-%m-%dT%H:%M:%S"))
            except ValueError:
                return None
    return None


def stop_reason(end_time: float | None, grace: float, now: float | None = None) -> str:
    """``time_limit`` for a TERM within ``grace`` (+ slack) of the job's end, else ``preempted``."""
    now = time.time() if now is None else now
    if end_time is not None and now >= end_time - grace - SLACK_S:
        return TIME_LIMIT
    return PREEMPTED


def signal_reason(run_dir: str | os.PathLike, signum: int) -> str:
    """Why a signal stops the run in ``run_dir``: a TERM that follows a stop asked for through grpo-tui (the stop
    file names who asked, then the supervisor's TERM or scancel's arrives) keeps that request's reason; else inside
    a Slurm job a TERM is ``time_limit`` or ``preempted``; otherwise the signal's name."""
    if signum != signal.SIGTERM:
        return f"{signal.Signals(signum).name} received"
    folder = RunFolder(Path(run_dir))
    asked = folder.stop_reason()
    if asked is not None:
        return asked if asked in (TIME_LIMIT, PREEMPTED) else f"stop file: {asked}"
    if job_id() is None:
        return f"{signal.Signals(signum).name} received"
    try:
        grace = float(os.environ.get(GRACE_ENV) or 0)
    except ValueError:
        grace = 0.0
    return stop_reason(folder.read_state().get("slurm_end_time"), grace)  # a number or None (run/state.py)
