"""One run's row, wherever the run is: what ``grpo-tui runs`` shows, ``runs --json`` sends, and a host's reply becomes.

The catalog makes one from a run folder here (``catalog.run_info``); ``to_dict`` is its ``runs --json`` row; a
host's row is checked into the same type where it arrives (``executors/wire.parse_run_row``), so a run here
and one on a host are listed, compared and shown alike, and the JSON keys are written in one place.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from trainer_core.contract.run.events import Eval, HealthWarning
from trainer_core.contract.run.line_check import SkippedLines
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import eval_figures, warning_record


@dataclass(frozen=True)
class EvalPoint:
    """One eval's value of the ranking metric, and its step."""

    step: int
    value: float | None

    def to_dict(self) -> dict:
        return {"step": self.step, "value": self.value}

    @classmethod
    def from_record(cls, record: object) -> EvalPoint | None:
        """``{step, value}`` as ``to_dict`` wrote it; None when it is not one."""
        if not isinstance(record, dict):
            return None
        step, value = record.get("step"), record.get("value")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            return None
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
        ):
            return None
        return cls(step, value)


EVAL_POINTS = ("baseline", "latest", "best")  # an ``eval`` record's points, after its ``metric``


@dataclass(frozen=True)
class EvalFigures:
    """A run's held-out evaluation in three figures of its ranking ``metric`` (``ledger.default_metric``): the
    baseline (the base model's eval, step 0), the latest eval and the best one (the highest; the later on a tie,
    as the ledger ranks checkpoints). Computed by ``summary.eval_figures``, which a finished run's summary
    stores: a run is listed alike from its summary and from its events."""

    metric: str
    baseline: EvalPoint | None
    latest: EvalPoint | None
    best: EvalPoint | None

    @classmethod
    def of(cls, evals: Mapping[int, Eval], metric: str | None) -> EvalFigures | None:
        """The figures of ``evals`` (by step); None without evals or a metric."""
        return cls.from_record(eval_figures(evals, metric))

    @classmethod
    def from_record(cls, record: object) -> EvalFigures | None:
        """The figures ``summary.eval_figures`` made (as a summary stores them); None when ``record`` is not
        that: None itself, or a record of the wrong shape (then its points are not trusted either)."""
        if not isinstance(record, dict) or not isinstance(record.get("metric"), str) or not record["metric"]:
            return None
        points = {}
        for name in EVAL_POINTS:
            value = record.get(name)
            points[name] = EvalPoint.from_record(value)
            if value is not None and points[name] is None:
                return None
        return cls(record["metric"], **points)

    def to_dict(self) -> dict:
        """The ``eval`` of a ``runs --json`` row."""
        points = {name: getattr(self, name) for name in EVAL_POINTS}
        return {"metric": self.metric, **{name: p and p.to_dict() for name, p in points.items()}}


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
    held_out: EvalFigures | None = None  # the held-out evaluation's figures; None: the run has no held-out set
    # lines at the end of its files that readers skip (run/line_check.py), by file name: empty when none; None when
    # not checked (a host whose grpo-tui does not say)
    skipped: dict[str, SkippedLines] | None = None

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
            "eval": None if self.held_out is None else self.held_out.to_dict(),
            "skipped_lines": None if self.skipped is None else {k: v.to_record() for k, v in self.skipped.items()},
        }
