"""How a run stands right now: the status to show, how long it has run, how many steps it will take.

A run's status comes from state.json, but a state that says it is still going is believed only while its
process is alive *and* is the same process (pid plus start time): otherwise the trainer died without
writing its end and the run reads as ``lost``. A local copy of a remote run (``executors/mirror.py``) has
no process here: its live status is the one its host judged, kept in ``.remote.json``. A Slurm run's
processes are on compute nodes: its live status comes from the queue (``slurm_queue.py``), and a requeued
job waiting to restart reads as ``queued`` even though its folder records how its last attempt ended.
"""

from __future__ import annotations

import time
from pathlib import Path

from orjson import loads

from grpo_tui.services.slurm import queue as slurm_queue
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.json_values import is_number
from trainer_core.contract.run.legs import paused_seconds
from trainer_core.contract.run.process import process_matches
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import run_total as run_total  # one rule, shared with the run's summary

STARTING_GRACE_S = 10.0
REMOTE_FILE = ".remote.json"  # in a mirrored run folder: what its host says of it


def is_live(status: Status | str | None) -> bool:
    parsed = Status.parse(status)
    return parsed is not None and parsed.is_live


def live_status(folder: RunFolder, state: dict | None = None) -> Status:
    """The status to show: a final status as written, a live one only while its process is the run's."""
    state = folder.read_state() if state is None else state
    status = Status.parse(state.get("status"))
    job = slurm_queue.job_of(state)
    if job is not None:
        return _slurm_status(status, job)
    if status is not None and status.is_final:
        return status
    remote = remote_view(folder)
    if remote is not None:
        return Status.parse(remote.get("status")) or Status.STARTING
    if process_matches(state.get("root_pid"), state.get("root_start_time")) or process_matches(
        state.get("pid"), state.get("pid_start_time")
    ):
        return status if status is not None and status.is_live else Status.STARTING
    if status is None and _age(folder.path) < STARTING_GRACE_S:
        # the launcher has made the folder but the trainer has not written its state yet
        return Status.STARTING
    return Status.LOST


def _slurm_status(status: Status | None, job: str) -> Status:
    if not slurm_queue.queue_known():  # no answer from Slurm: what the folder says
        return status or Status.QUEUED
    queued = slurm_queue.queued_job(job)
    if queued is not None and queued.waiting:
        return Status.QUEUED
    if status is not None and status.is_final:
        return status
    if queued is not None:
        return status if status is not None and status is not Status.QUEUED else Status.STARTING
    return Status.LOST  # out of the queue with no end recorded: Slurm ended it (slurm_queue.QUEUE.ended says how)


def remote_view(folder: RunFolder) -> dict | None:
    """What the host of a mirrored run last said (status, alerts, GPUs, connected, error); None for a local run."""
    try:
        with open(folder.path / REMOTE_FILE, "rb") as fh:
            data = loads(fh.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return float("inf")


def run_duration(
    state: dict, status: str, now: float | None = None, last_event_time: float | None = None
) -> float | None:
    """How long the run has trained: to its end, to now while it lives, to its last sign of life when lost; less
    the pauses between a resumed run's legs (``contract/run/legs.py``)."""
    started, ended = state.get("started"), state.get("ended")
    now = time.time() if now is None else now
    if not is_number(started):
        return None
    paused = paused_seconds(state)
    if is_number(ended):
        return max(0.0, ended - started - paused)
    if is_live(status):
        return max(0.0, now - started - paused)
    # lost: the last sign of life is the newest of the state's update and the last event
    times = [t for t in (state.get("updated"), last_event_time) if is_number(t)]
    return max(0.0, max(times) - started - paused) if times else None
