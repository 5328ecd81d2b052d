"""How a stop went: one record for a stop made here and for the one a host reports back.

The supervisor makes it (``supervisor.stop_run``, a Slurm run's through ``slurm_stop.py``), every executor
returns it, ``grpo-tui stop --json`` prints ``to_wire()`` and a caller over SSH parses that back into the same
type (``executors/wire.parse_stop_reply``); ``failed`` is the one rule for "the user should look", which
``executors.base.judge_stop`` and ``grpo-tui stop``'s exit code apply.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from trainer_core.contract.run.status import Status


@dataclass(frozen=True)
class StopOutcome:
    """``forced``: the processes signalled after the graceful stage; ``left``: those still alive after KILL;
    ``refused``: why a process on record (or a Slurm job id) was not signalled. A Slurm run's processes are on
    a node no one here can see, so its stop says ``0`` for "the job" in ``forced`` and ``left``. ``message``:
    what the user is told, refusals included."""

    run_id: str | None
    was_running: bool
    graceful: bool
    forced: tuple[int, ...]
    left: tuple[int, ...]
    status: Status | None
    message: str
    refused: tuple[str, ...] = ()

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
        return cls(run_id, was_running, graceful, forced, left, status, message, refused)

    @property
    def failed(self) -> bool:
        """Something is left, or was refused: the run may still be running, and the user should look."""
        return bool(self.left or self.refused)

    def to_wire(self) -> dict:
        """``stop --json``'s object (docs/hosts.md)."""
        return {
            "run_id": self.run_id,
            "was_running": self.was_running,
            "graceful": self.graceful,
            "forced": list(self.forced),
            "left": list(self.left),
            "refused": list(self.refused),
            "status": self.status.value if self.status else None,
            "message": self.message,
        }


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
