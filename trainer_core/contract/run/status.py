"""Run statuses: one enum, the transitions a run folder may make, and the groups viewers ask about.

``state.json`` stores the value as a plain string (docs/run-format.md). ``lost`` is never written by a
trainer: a viewer derives it when a state that says the run is live has no live process behind it. Every
ended run may be resumed (a completed one with a higher ``--max-steps``), so every ended status may
become ``starting`` again. ``queued`` is a run submitted to a scheduler that has not started yet; a
requeued Slurm job shows as ``queued`` again (derived from the queue, not written) until it restarts.
"""

from __future__ import annotations

from trainer_core.contract.run.value_enum import ValueEnum


class Status(ValueEnum):
    QUEUED = "queued"  # submitted to a scheduler (Slurm), waiting for resources
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    COMPLETED = "completed"
    STOPPED = "stopped"
    FAILED = "failed"
    LOST = "lost"

    @property
    def is_live(self) -> bool:
        return self in LIVE

    @property
    def is_final(self) -> bool:
        return self in FINAL

    @property
    def resumable(self) -> bool:
        return self in RESUMABLE

    def can_become(self, new: Status) -> bool:
        return new is self or new in TRANSITIONS[self]


EXIT_BAD_INPUT = 2
"""The exit code of every command, the trainer's included, for a mistake in what the user gave (a flag, a
config, an environment, a dataset): refused before anything ran, with the field, the value and the fix."""

EXIT_CODES = {Status.COMPLETED: 0, Status.STOPPED: 3}
"""How a run's processes exit when it ended so (``grpo-tui train``, a run's root on every machine); a failed run
exits non-zero, 1 unless its launcher said more; EXIT_BAD_INPUT is kept for bad input."""


def exit_code(status: Status | None, launcher: int) -> int:
    """The exit code for a run that ended with ``status``, whatever its launcher returned (``accelerate launch``
    and torchrun exit 1 when a rank exits 3 on a graceful stop); ``launcher``'s own when no end is on record."""
    if status is not None and status in EXIT_CODES:
        return EXIT_CODES[status]
    if status is Status.FAILED:
        return launcher or 1
    return launcher


LIVE = frozenset({Status.QUEUED, Status.STARTING, Status.RUNNING, Status.STOPPING})
FINAL = frozenset({Status.COMPLETED, Status.STOPPED, Status.FAILED})
RESUMABLE = frozenset({Status.COMPLETED, Status.STOPPED, Status.FAILED, Status.LOST})

# a run ends from any live status; an ended (or lost) run starts again when it is resumed
TRANSITIONS: dict[Status, frozenset[Status]] = {
    Status.QUEUED: frozenset({Status.STARTING, Status.RUNNING, *FINAL}),  # a job cancelled in the queue: stopped
    Status.STARTING: frozenset({Status.RUNNING, Status.STOPPING, *FINAL}),
    Status.RUNNING: frozenset({Status.STOPPING, *FINAL}),
    Status.STOPPING: frozenset(FINAL),
    Status.COMPLETED: frozenset({Status.STARTING}),
    Status.STOPPED: frozenset({Status.STARTING}),
    Status.FAILED: frozenset({Status.STARTING}),
    Status.LOST: frozenset({Status.STARTING, *FINAL}),
}


class IllegalTransition(RuntimeError):
    """A write that would move a run folder's status along a transition the format does not have."""

    def __init__(self, old: Status, new: Status):
        allowed = ", ".join(sorted(s.value for s in TRANSITIONS[old])) or "nothing (it is final)"
        super().__init__(f"a {old.value} run cannot become {new.value}; from {old.value} it may become {allowed}")
        self.old, self.new = old, new
