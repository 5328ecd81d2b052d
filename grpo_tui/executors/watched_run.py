"""A run as a monitor holds it, wherever it runs: its executor, how it names the run, the folder here that shows it.

The monitor reads ``folder``; it asks the executor to stop the run and the copy for the GPUs of the run's
machine, so it never needs to know whether the run is here (its own folder) or on a host (a mirror).
"""

from __future__ import annotations

from dataclasses import dataclass

from grpo_tui.services.machine.gpus import GPU
from grpo_tui.services.records.stop_outcome import StopOutcome
from trainer_core.contract.run.folder import RunFolder

from .base import Executor, ExecutorError, RunCopy, RunRef

READY_TIMEOUT = 120.0


@dataclass
class WatchedRun:
    executor: Executor
    run: RunRef
    copy: RunCopy

    @classmethod
    def open(cls, executor: Executor, run: RunRef, timeout: float = READY_TIMEOUT) -> WatchedRun:
        """The copy started and holding config and state (for a remote run this blocks: call it from a worker)."""
        copy = executor.mirror(run).start()
        try:
            wait_ready(copy, executor, run, timeout)
        except ExecutorError:
            copy.stop()
            raise
        return cls(executor, run, copy)

    @property
    def host(self) -> str:
        return self.executor.name

    @property
    def folder(self) -> RunFolder:
        return self.copy.folder

    def gpus(self) -> list[GPU]:
        return self.copy.gpus()

    def stop(self, force: bool = False, by: str | None = None) -> StopOutcome:
        return self.executor.stop(self.run, force=force, by=by)

    def close(self) -> None:
        self.copy.stop()


def wait_ready(copy: RunCopy, executor: Executor, run: RunRef, timeout: float = READY_TIMEOUT) -> None:
    """ExecutorError unless ``copy`` has config and state within ``timeout`` s (or says why it cannot)."""
    if not copy.wait_ready(timeout):
        raise ExecutorError(f"{executor.where}: run {run.run_id} sent nothing within {timeout:.0f}s")
