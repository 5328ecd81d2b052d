"""This machine as an executor: run folders read in place, processes started and stopped here.

Nothing is implemented here: the catalog lists and resolves (``services/catalog/folders.py``), ``run_status`` says how
a run stands, ``services/lifecycle/launching.py`` creates and starts (or submits to Slurm), the supervisor stops (a Slurm
run's stop asks the queue: ``services/lifecycle/slurm_stop.py``) and resumes (a Slurm run's resume is a new job:
``services/slurm/batch.py``), ``log_follow`` reads the log, the GPU probe
lists GPUs. This module gives them the ``Executor`` shape (``base.py``), so that a screen or a command treats
a run here and one on a host alike, and the CLI's resume is find, then resume, here. A local run's "mirror" is
its own folder.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from grpo_tui.services.catalog.folders import UnknownRunError, list_runs, resolve_run, run_info
from grpo_tui.services.catalog.status import live_status
from grpo_tui.services.lifecycle.launching import launch_from_app
from grpo_tui.services.lifecycle.supervisor import (
    DEFAULT_STOP_TIMEOUT,
    LaunchOptions,
    plan_resume,
    start_root,
    stop_run,
)
from grpo_tui.services.machine.gpus import GPU, list_gpus, visible_indices
from grpo_tui.services.records.host_info import HostInfo
from grpo_tui.services.records.run_row import RunInfo
from grpo_tui.services.records.stop_outcome import StopOutcome
from grpo_tui.services.slurm.batch import node_gpus, resubmit
from grpo_tui.services.stream.log_follow import log_chunks
from trainer_core.contract.config.resume_plan import ResumeChange, ResumePlan
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.folder import FORMAT_VERSION, RunFolder, resolve_runs_dir
from trainer_core.contract.run.status import Status

from .. import __version__
from .base import ExecutorError, Launched, OnPlan, RunListing, RunRef
from .hosts import LOCAL


class LocalCopy:
    """A local run's folder is its own copy: there is nothing to fetch, and it is ready at once.

    ``gpus()`` probes this machine once and keeps the answer: the monitor asks on every slow read, and this
    machine's panel has always shown the GPUs as they were when it opened."""

    def __init__(self, folder: RunFolder):
        self.folder = folder
        self.ready = threading.Event()
        self.ready.set()
        self._gpus: list[GPU] | None = None

    def start(self) -> LocalCopy:
        return self

    def stop(self) -> None:
        pass

    def sync(self) -> None:
        pass

    def wait_ready(self, timeout: float) -> bool:
        return True

    def gpus(self) -> list[GPU]:
        if self._gpus is None:
            self._gpus = list_gpus()
        return self._gpus


class LocalExecutor:
    """Runs in ``runs_dir`` (None: ``--runs-dir``'s default, $GRPO_TUI_RUNS_DIR, else ./runs) on this machine."""

    kind = "local"
    name = LOCAL
    host_name = None
    where = "this machine"
    folders_here = True

    def __init__(self, runs_dir: str | Path | None = None):
        self.runs_dir = runs_dir

    def info(self) -> HostInfo:
        """What ``grpo-tui info --json`` prints here, and what a remote caller parses into the same record."""
        return HostInfo(
            __version__,
            FORMAT_VERSION,
            socket.gethostname(),
            str(resolve_runs_dir(self.runs_dir).expanduser().absolute()),
            sys.version.split()[0],
            tuple(list_gpus()),
        )

    def gpus(self) -> list[GPU]:
        visible = visible_indices()
        return [g for g in list_gpus() if g.index in visible]

    def _folder(self, ref: str) -> RunFolder:
        try:
            return resolve_run(self.runs_dir, ref)
        except UnknownRunError as exc:
            raise ExecutorError(str(exc)) from None

    def list_runs(self, refs: list[str] | None = None) -> RunListing:
        if not refs:
            return RunListing(list_runs(self.runs_dir))
        return RunListing([run_info(self._folder(ref)) for ref in refs])

    def find(self, ref: str) -> RunInfo:
        return run_info(self._folder(ref))

    def mirror(self, run: RunRef) -> LocalCopy:
        return LocalCopy(RunFolder(Path(run.path)))

    def status(self, run: RunRef) -> Status:
        return live_status(RunFolder(Path(run.path)))

    def launch(self, config: RunConfig, gpus: list[int] | None = None, num_processes: int | None = None) -> Launched:
        """Create and start (or submit) the run; its ``inspection`` is already set by the gate. Raises LaunchError."""
        runs_dir = self.runs_dir if self.runs_dir is not None else resolve_runs_dir(None)
        folder = launch_from_app(config, runs_dir, gpus, num_processes)
        state = folder.read_state()
        return Launched(folder.run_id, str(folder.path), state.get("root_pid"), _job(state.get("slurm_job_id")))

    def stop(
        self, run: RunRef, force: bool = False, timeout: float = DEFAULT_STOP_TIMEOUT, by: str | None = None
    ) -> StopOutcome:
        return stop_run(RunFolder(Path(run.path)), force=force, timeout=timeout, by=by)

    def prepare_resume(
        self,
        run: RunRef,
        max_steps: int | None = None,
        *,
        gpus: list[int] | None = None,
        num_processes: int | None = None,
        checkpoint: str | None = None,
        change: ResumeChange | None = None,
        available: list[int] | None = None,
    ) -> ResumePlan:
        """Make ``run`` ready to continue (its plan applied, with the placement), for a caller that starts it
        itself (``grpo-tui train --resume``, in the foreground); ``checkpoint``: best, last or a step instead of
        the newest; ``change``: the settings it changes and who asked; ``available``: the GPUs it is planned on,
        when not this machine's. ExecutorError when it cannot be resumed."""
        try:
            return plan_resume(
                RunFolder(Path(run.path)),
                max_steps=max_steps,
                gpus=gpus,
                num_processes=num_processes,
                checkpoint=checkpoint,
                change=change,
                available=available,
            )
        except ConfigError as exc:
            raise ExecutorError(str(exc)) from None

    def resume(
        self,
        run: RunRef,
        max_steps: int | None = None,
        on_plan: OnPlan | None = None,
        *,
        gpus: list[int] | None = None,
        num_processes: int | None = None,
        options: LaunchOptions | None = None,
        checkpoint: str | None = None,
        change: ResumeChange | None = None,
    ) -> Launched:
        """``prepare_resume``, ``on_plan`` told the plan, then the run started detached (``grpo-tui launch
        --resume``, ``rollback``, the runs screen's Resume and Extend); a Slurm run's leg is submitted as a new job
        (``Launched.slurm_job_id``), planned on its node's GPUs, never started on this (login) node."""
        folder = RunFolder(Path(run.path))
        on_node = node_gpus(folder)  # a Slurm run goes on in a new job of its script, planned on its node's GPUs
        plan = self.prepare_resume(
            run,
            max_steps,
            gpus=gpus,
            num_processes=num_processes,
            checkpoint=checkpoint,
            change=change,
            available=on_node,
        )
        assert plan.placement is not None, "plan_resume fills in the placement it applied"
        if on_plan is not None:
            on_plan(plan)
        if on_node is not None:
            try:
                job = resubmit(folder, plan.placement)
            except ConfigError as exc:
                raise ExecutorError(str(exc)) from None
            return Launched(folder.run_id, str(folder.path), None, job)
        try:
            proc = start_root(folder, plan.placement, options)
        except OSError as exc:
            raise ExecutorError(f"cannot start run {folder.run_id}: {exc}") from None
        return Launched(folder.run_id, str(folder.path), proc.pid)

    def logs(self, run: RunRef, follow: bool = False) -> Iterator[str]:
        return log_chunks(RunFolder(Path(run.path)), follow=follow)


def _job(value) -> str | None:
    return None if value is None else str(value)
