"""Roll back… from the runs screen or a monitor: the dialog, then the rollback as ``grpo-tui rollback`` does it.

The rollback takes the CLI's own steps (``cli/rollback.py``): the checkpoint and the reason checked as ``--to``
and ``--reason`` are, the settings parsed into the ``ResumeChange`` a resume makes, the run stopped first when it
is live (``services/lifecycle/rollback.stop_first``: gracefully, with a checkpoint; a stop that leaves a process
ends it there), then resumed from the checkpoint with the change by this machine's executor, detached. The
rewind is recorded as the app's (``by: viewer``). It blocks for as long as a stop takes, so a worker does it; the
run's monitor then opens (again, for a monitor: its reader has stopped with the run). A Slurm run here goes on in
a new job, as the executor resumes one. A run on a host has no rollback in its executor yet: the app names the
command that does it there instead.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual.screen import Screen

from grpo_tui.services.lifecycle.rollback import checked_reason, checkpoint_of, stop_first
from trainer_core.contract.config.resume_changes import parse_sets
from trainer_core.contract.config.resume_plan import ResumeChange, ResumePlan
from trainer_core.contract.config.run_config import ConfigError
from trainer_core.contract.run.events import RewindBy
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

from ..executors.base import Executor, ExecutorError, RunRef
from ..executors.local import LocalExecutor
from .rollback import RollbackRequest, RollbackScreen, rollback_argv

if TYPE_CHECKING:
    from ..app import GrpoApp


def elsewhere_message(run_id: str, host: str) -> str:
    """What to do for a run on a host, whose executor has no rollback yet."""
    command = shlex.join(rollback_argv(run_id, RollbackRequest("N"), host=host))
    return (
        f"Run {run_id} is on {host}: the app cannot roll back a run on a host yet. In a terminal, run {command} "
        f"with N the checkpoint's step, best or last (grpo-tui checkpoints {run_id} --host {host} lists them), and "
        "--set KEY=VALUE and --reason TEXT as needed."
    )


def offer_rollback(screen: Screen, executor: Executor, run: RunRef, status: Status, *, replace: bool = False) -> None:
    """Ask how to roll ``run`` back, then do it in a worker; a run elsewhere is told the command instead.
    ``replace``: ``screen`` is the run's monitor, which the new one takes the place of."""
    if not isinstance(executor, LocalExecutor):
        screen.notify(elsewhere_message(run.run_id, executor.name), severity="warning", timeout=15)
        return

    def answered(request: RollbackRequest | None) -> None:
        if request is None:
            return
        screen.notify(f"Rolling back run {run.run_id} to step {request.to}…")
        screen.run_worker(
            lambda: _work(screen, executor, run, request, replace),
            thread=True,
            group="rollback",
            exit_on_error=False,
        )

    screen.app.push_screen(RollbackScreen(run.run_id, run.path, status), answered)


def _work(screen: Screen, executor: LocalExecutor, run: RunRef, request: RollbackRequest, replace: bool) -> None:
    app = cast("GrpoApp", screen.app)
    try:
        said = roll_back(executor, run, request)
    except (ConfigError, ExecutorError) as exc:
        app.call_from_thread(app.notify, str(exc), severity="error", timeout=15)
        return
    app.call_from_thread(_done, app, screen, executor, run, said, replace)


def _done(app: GrpoApp, screen: Screen, executor: Executor, run: RunRef, said: str, replace: bool) -> None:
    app.notify(said, timeout=8)
    if replace and app.screen is screen:
        app.pop_screen()
    app.open_run(executor, run)


def roll_back(executor: LocalExecutor, run: RunRef, request: RollbackRequest) -> str:
    """``grpo-tui rollback RUN --to STEP --set … --reason …`` for a run here (blocks); what to tell the user.
    ConfigError or ExecutorError, naming the problem, when it could not be done (nothing resumed then)."""
    checkpoint = checkpoint_of(request.to)
    change = ResumeChange(
        parse_sets(list(request.sets)), by=RewindBy.VIEWER.value, reason=checked_reason(request.reason)
    )
    stopped = stop_first(RunFolder(Path(run.path)))
    plans: list[ResumePlan] = []
    launched = executor.resume(run, on_plan=plans.append, checkpoint=checkpoint, change=change)
    said = plans[0].message if plans else f"rolled back run {run.run_id} to {checkpoint}"
    job = launched.slurm_job_id
    said += f"\nsubmitted as Slurm job {job}" if job else ""
    return f"{stopped.message}\n{said}" if stopped is not None else said
