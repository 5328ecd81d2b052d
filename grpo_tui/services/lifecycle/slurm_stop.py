"""Stopping a Slurm run: cancel it in the queue, or stop it gracefully and then make Slurm end the job.

A queued job never started: ``scancel`` and the run is ``stopped``. A running job is asked as any run is
(the stop-request file: finish the step, save a checkpoint), and its processes get a TERM through Slurm
(``scancel --signal=TERM --full``: the batch shell and every step), since they live on a compute node; if
the run has not ended within the timeout, ``scancel`` ends the job (TERM, then KILL after KillWait).
The job id comes from the run folder: it is checked before anything is asked of Slurm (a word such as
``--me`` would make scancel cancel every job of the user).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterable

from grpo_tui.services.catalog.status import live_status
from grpo_tui.services.lifecycle.stop_request import request_stop, stopped
from grpo_tui.services.records.stop_outcome import StopOutcome
from grpo_tui.services.slurm.queue import QUEUE, queued_job
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.slurm_job import check_job_id
from trainer_core.contract.run.status import Status


def _scancel(folder: RunFolder, job: str, *options: str) -> None:
    check_job_id(job, folder.run_id)
    subprocess.run(["scancel", *options, job], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)


def stop_job(
    folder: RunFolder,
    job: str,
    force: bool,
    timeout: float,
    on_wait=None,
    notes: Iterable[str] = (),
    by: str | None = None,
) -> StopOutcome:
    """How the stop of the run of Slurm job ``job`` went (``notes``: said after it; ``by``: who asked, in the
    stop request); SlurmJobError, before any command, when ``job`` is not a job id."""
    check_job_id(job, folder.run_id)
    status = live_status(folder)
    if status is Status.QUEUED:
        _scancel(folder, job)
        QUEUE.forget()
        was = folder.status()
        reason = (
            "cancelled while queued for a restart"
            if was is not None and was.is_final
            else "cancelled while queued: it never started"
        )
        folder.write_state(
            status=Status.STOPPED, exit_reason=reason, ended=folder.read_state().get("ended") or round(time.time(), 3)
        )
        said = f"run {folder.run_id}: Slurm job {job} {reason}; status stopped."
        return StopOutcome.of(
            folder.run_id, was_running=True, graceful=True, status=Status.STOPPED, said=said, notes=notes
        )
    if not status.is_live:
        return StopOutcome.of(folder.run_id, was_running=False, status=status, notes=notes)
    deadline = time.monotonic() + timeout
    graceful, forced, left = False, (), ()
    if not force:
        request_stop(folder, by)
        _scancel(folder, job, "--signal=TERM", "--full")
        while time.monotonic() < deadline and live_status(folder).is_live:
            if on_wait:
                on_wait(deadline - time.monotonic())
            QUEUE.forget()
            time.sleep(1.0)
        graceful = not live_status(folder).is_live
    if not graceful:
        _scancel(folder, job)
        forced = (0,)
    # the job leaves the queue once its processes are gone: that is "nothing left" on a node we cannot see
    while time.monotonic() < deadline + 60:
        QUEUE.forget()
        queued = queued_job(job)
        if queued is None:
            break
        time.sleep(1.0)
    else:
        left = (0,)
    if not graceful and not (folder.status() or Status.RUNNING).is_final:
        folder.write_state(
            status=Status.STOPPED, exit_reason="forced: cancelled through Slurm", ended=round(time.time(), 3)
        )
    return stopped(folder, graceful, forced, left, notes)
