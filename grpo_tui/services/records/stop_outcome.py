"""How a stop went: one record for a stop made here and for the one a host reports back.

The supervisor makes it (``supervisor.stop_run``, a Slurm run's through ``slurm_stop.py``), every executor
returns it, ``grpo-tui stop --json`` prints ``to_wire()`` and a caller over SSH parses that back into the same
type (``StopOutcome.from_wire``): each field is declared once with its key and check (``fields.wire``), in the
order of the JSON's keys. ``failed`` is the one rule for "the user should look", which
``executors.base.judge_stop`` and ``grpo-tui stop``'s exit code apply.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from grpo_tui.services.records.fields import (
    FLAG,
    STATUS,
    TEXT,
    TEXT_OR_NULL,
    Record,
    array_schema,
    checked,
    items,
    maybe,
    parse_status,
    wire,
)
from trainer_core.contract.run.json_values import whole
from trainer_core.contract.run.status import Status

PID = whole(0, (1 << 31) - 1, words="a process id (0: a Slurm job)")


def _pids(value: Any, where: str) -> tuple[int, ...]:
    return tuple(checked(pid, PID, f"{where}[{i}]") for i, pid in enumerate(items(value, where)))


def _texts(value: Any, where: str) -> tuple[str, ...]:
    return tuple(checked(why, TEXT, f"{where}[{i}]") for i, why in enumerate(items(value, where)))


@dataclass(frozen=True)
class StopOutcome(Record):
    """``forced``: the processes signalled after the graceful stage; ``left``: those still alive after KILL;
    ``refused``: why a process on record (or a Slurm job id) was not signalled. A Slurm run's processes are on
    a node no one here can see, so its stop says ``0`` for "the job" in ``forced`` and ``left``. ``message``:
    what the user is told, refusals included. ``to_wire()`` is ``stop --json``'s object (docs/hosts.md)."""

    schema_name = "cli.stop"

    run_id: str | None = wire(TEXT_OR_NULL)
    was_running: bool = wire(FLAG, missing=False)
    graceful: bool = wire(FLAG, missing=False)
    forced: tuple[int, ...] = wire(load=_pids, dump=list, schema=array_schema(PID.json_schema()))
    left: tuple[int, ...] = wire(load=_pids, dump=list, schema=array_schema(PID.json_schema()))
    refused: tuple[str, ...] = wire(
        load=_texts, dump=list, schema=array_schema(TEXT.json_schema()), default=()
    )  # absent from a host older than it
    status: Status | None = wire(
        load=lambda v, where: None if v is None else parse_status(v, where),
        dump=maybe(lambda s: s.value),
        schema={"anyOf": [STATUS, {"type": "null"}]},
        default=None,
    )
    message: str = wire(TEXT, default="")

    @classmethod
    def of(
        cls,
        run_id: str,
        *,
        was_running: bool,
        graceful: bool = False,
        forced: Iterable[int] = (),
        left: Iterable[int] = (),
        status: Status | None = None,
        refused: Iterable[str] = (),
        said: str | None = None,
        notes: Iterable[str] = (),
    ) -> StopOutcome:
        """The outcome with its message: ``said`` (a cancelled Slurm job) or the usual sentence, then each
        refusal and each note (a state.json read with problems) that it does not already say."""
        forced, left, refused = tuple(forced), tuple(left), tuple(refused)
        sentence = said or _sentence(run_id, was_running, graceful, forced, left, status, refused)
        message = " ".join(dict.fromkeys([sentence, *refused, *notes]))  # a refusal may be the sentence itself
        return cls(run_id, was_running, graceful, forced, left, refused, status, message)

    @property
    def failed(self) -> bool:
        """Something is left, or was refused: the run may still be running, and the user should look."""
        return bool(self.left or self.refused)


def _sentence(
    run_id: str,
    was_running: bool,
    graceful: bool,
    forced: tuple[int, ...],
    left: tuple[int, ...],
    status: Status | None,
    refused: tuple[str, ...],
) -> str:
    if refused and not was_running:
        return (
            f"run {run_id}: nothing was signalled; its state.json names a process that is not the run's "
            "(planted, or copied from another run?)."
        )
    if not was_running:
        return f"run {run_id} is not running (status: {status}); nothing to stop."
    if left:
        return (
            f"run {run_id}: processes {', '.join(map(str, left))} are still alive after KILL "
            "(uninterruptible I/O?); check them with ps."
        )
    how = "stopped gracefully" if graceful else f"forced to stop ({len(forced)} process(es) signalled)"
    return f"run {run_id} {how}; status {status}; no process of the run is left."
