"""One run's row, wherever the run is: what ``grpo-tui runs`` shows, ``runs --json`` sends, and a host's reply becomes.

The catalog makes one from a run folder here (``catalog.run_info``); ``to_dict`` is its ``runs --json`` row; a
host's row is checked into the same type where it arrives (``executors/wire.parse_run_row``), so a run here
and one on a host are listed, compared and shown alike, and the JSON keys are written in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from trainer_core.contract.run.events import HealthWarning
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import warning_record


@dataclass
class RunInfo:
    """One run as ``grpo-tui runs`` shows it; times are unix seconds, ``duration`` is seconds; ``path`` is the
    folder's path where the run is (a path on its host for a remote run)."""

    run_id: str
    path: Path
    project: str | None
    model: str | None
    status: Status
    step: int | None
    total: int | None
    last_reward: float | None
    started: float | None
    ended: float | None
    duration: float | None
    warnings: int
    last_warning: str | None
    exit_reason: str | None
    alerts: list[HealthWarning] = field(default_factory=list)  # watcher-side warnings: stall, crash cause
    host: str | None = None  # the host it runs on (executors/hosts.py); None: this machine
    queue_reason: str | None = None  # a queued Slurm job: why it waits (Priority, Resources, ...)

    @property
    def key(self) -> str:
        """Unique across hosts: the run id, prefixed by the host for a remote run."""
        return self.run_id if self.host is None else f"{self.host}:{self.run_id}"

    def to_dict(self) -> dict:
        """The row of ``grpo-tui runs --json`` (the fields in order; ``dataclasses.asdict`` is slow on 10k rows)."""
        return {
            "run_id": self.run_id,
            "path": str(self.path),
            "project": self.project,
            "model": self.model,
            "status": self.status.value,
            "step": self.step,
            "total": self.total,
            "last_reward": self.last_reward,
            "started": self.started,
            "ended": self.ended,
            "duration": self.duration,
            "warnings": self.warnings,
            "last_warning": self.last_warning,
            "exit_reason": self.exit_reason,
            "alerts": [warning_record(a) for a in self.alerts],
            "host": self.host,
            "queue_reason": self.queue_reason,
        }
