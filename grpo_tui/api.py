"""Python API for runs that outlive the caller: ``launch(config) -> RunHandle``.

The handle holds nothing but the run folder, so it can be rebuilt later (``RunHandle.open``) from any
process, on the same terms as the CLI and the app.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from grpo_tui.services.catalog.folders import resolve_run
from grpo_tui.services.lifecycle.supervisor import DEFAULT_STOP_TIMEOUT, LaunchOptions, create_run, start_root
from grpo_tui.services.records.stop_outcome import StopOutcome
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import read_events
from trainer_core.contract.run.events import Event, EventType
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

from .executors.local import LocalExecutor

HERE = LocalExecutor()  # this machine's executor: a handle names its run by its folder, whatever the runs dir


@dataclass(frozen=True)
class RunHandle:
    folder: RunFolder

    @classmethod
    def open(cls, run: str, runs_dir=None) -> RunHandle:
        return cls(resolve_run(runs_dir, run))

    @property
    def run_id(self) -> str:
        return self.folder.run_id

    @property
    def path(self) -> Path:
        return self.folder.path

    def status(self) -> Status:
        return HERE.status(self)

    def events(self, type: EventType | str | None = None) -> list[Event]:
        """The run's events so far, typed (trainer_core.contract.run.events), of one type if given."""
        events = read_events(self.folder.events_file)
        return [e for e in events if type is None or e.type == type]

    def stop(self, *, force: bool = False, timeout: float = DEFAULT_STOP_TIMEOUT, by: str | None = None) -> StopOutcome:
        """Stop the run (``Executor.stop``); ``by``: who asked, recorded in its stop request."""
        return HERE.stop(self, force=force, timeout=timeout, by=by)

    def wait(self, timeout: float | None = None, poll: float = 0.5) -> Status:
        """Block until the run ends (or ``timeout`` s pass); return its status."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            status = self.status()
            if not status.is_live:
                return status
            if deadline is not None and time.monotonic() > deadline:
                return status
            time.sleep(poll)


def launch(
    config: RunConfig,
    runs_dir=None,
    *,
    gpus: list[int] | None = None,
    num_processes: int | None = None,
    options: LaunchOptions | None = None,
) -> RunHandle:
    """Validate, create the run folder and start the run detached; return at once."""
    options = options or LaunchOptions()
    folder, placement = create_run(
        config, runs_dir, gpus=gpus, num_processes=num_processes, vllm_port=options.vllm_port
    )
    start_root(folder, placement, options)
    return RunHandle(folder)
