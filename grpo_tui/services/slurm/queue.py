"""What Slurm says of a run's job: queued (and why), running, or gone (and how it ended).

A Slurm run's processes live on compute nodes, so its status cannot come from a process check here. The
queue is read with one ``squeue`` call for every job of the user, at most every ``QUEUE_SECONDS`` however
many runs ask; a job that has left the queue while its run folder records no end is looked up once with
``scontrol show job`` (which keeps ended jobs for the cluster's MinJobAge; ``sacct`` needs accounting).
Commands that fail (no Slurm here, the controller down) read as "unknown", never as an ended job, and so
does a job id that is not one (``slurm_job.check_job_id``): it is never passed to ``scontrol``.
"""

from __future__ import annotations

import getpass
import subprocess
import threading
import time
from dataclasses import dataclass

from trainer_core.contract.run.slurm_job import check_job_id, valid_job_id

QUEUE_SECONDS = 3.0
WAITING = frozenset({"PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD", "SUSPENDED"})
RUNNING = frozenset({"RUNNING", "CONFIGURING", "COMPLETING", "STAGE_OUT", "SIGNALING", "RESIZING"})


@dataclass(frozen=True)
class Job:
    state: str  # Slurm's JobState: PENDING, RUNNING, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, CANCELLED, ...
    reason: str  # Slurm's Reason: Priority, Resources, None, ...

    @property
    def waiting(self) -> bool:
        return self.state in WAITING

    @property
    def running(self) -> bool:
        return self.state in RUNNING


class _Queue:
    def __init__(self):
        self._lock = threading.Lock()
        self._read_at = float("-inf")
        self._jobs: dict[str, Job] | None = None
        self._ended: dict[str, Job | None] = {}

    def jobs(self) -> dict[str, Job] | None:
        """Every queued or running job of the user; None when squeue cannot be asked."""
        with self._lock:
            if time.monotonic() - self._read_at >= QUEUE_SECONDS:
                self._read_at = time.monotonic()
                self._jobs = _squeue()
            return self._jobs

    def ended(self, job_id: str) -> Job | None:
        """How a job that left the queue ended (scontrol), remembered; None when unknown (or not a job id)."""
        if not valid_job_id(job_id):
            return None
        with self._lock:
            if job_id not in self._ended:
                found = _scontrol(job_id)
                if found is None or found.waiting or found.running:
                    return found  # not ended after all (or unknown): ask again next time
                self._ended[job_id] = found
            return self._ended[job_id]

    def forget(self) -> None:
        """Read afresh at the next question (after a submit or a cancel)."""
        with self._lock:
            self._read_at = float("-inf")


QUEUE = _Queue()


def _run(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _squeue() -> dict[str, Job] | None:
    out = _run(["squeue", "-h", "-u", getpass.getuser(), "-o", "%i|%T|%r"])
    if out is None:
        return None
    jobs = {}
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3:
            jobs[parts[0]] = Job(parts[1], parts[2])
    return jobs


def _scontrol(job_id: str) -> Job | None:
    out = _run(["scontrol", "show", "job", "-o", check_job_id(job_id)])
    if not out:
        return None
    fields = dict(word.split("=", 1) for word in out.split() if "=" in word)
    return Job(fields["JobState"], fields.get("Reason", "None")) if "JobState" in fields else None


def job_of(state: dict) -> str | None:
    job = state.get("slurm_job_id")
    return str(job) if job else None


def queued_job(job_id: str) -> Job | None:
    jobs = QUEUE.jobs()
    return None if jobs is None else jobs.get(job_id)


def queue_known() -> bool:
    return QUEUE.jobs() is not None
