"""One training process's share of a run: its rank, its writers, its stop controller and its final record.

The runner creates it and the TRL setup hands its parts to TRL (the event writer to the callback, the
samples file to the reward adapter), so neither reaches into the other. Only rank 0 writes.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.checkpoints import checkpoint_step
from trainer_core.contract.run.disk import release_reserve
from trainer_core.contract.run.event_log import EventWriter, JsonlWriter, last_step
from trainer_core.contract.run.events import Event, StopRequested
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status
from trainer_core.training.stopping import StopController


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


class RunContext:
    def __init__(self, config: RunConfig, folder: RunFolder, echo: bool):
        self.config = config
        self.folder = folder
        self.echo = echo
        self.main = rank() == 0
        self.writer = EventWriter(folder.events_file) if self.main else None
        self.samples: JsonlWriter | None = None
        self.last_step = 0
        self.resumed_from: str | None = None
        self.from_base = False  # a leg that went back to the base model (step 0) of a run with a history
        self.trained = False  # a step of this leg finished
        self.finished = False
        self.end_reason: str | None = None
        self.stopper = StopController(folder.stop_file, self._on_stop_request, self._on_force)

    def emit(self, event: Event) -> None:
        if self.writer is not None:
            self.writer.emit(event)

    def open_samples(self) -> JsonlWriter | None:
        """samples.jsonl, opened once on rank 0 (None on the other ranks)."""
        if self.main and self.samples is None:
            self.samples = JsonlWriter(self.folder.samples_file)
        return self.samples

    def set_step(self, step: int) -> None:
        self.last_step = step
        self.trained = True

    def begin_resume(self, resume_from: str) -> None:
        """A resumed leg starts at the step on record (the checkpoint's, or further if the run got further),
        so a leg that fails before its first step records the run's real step, not 0."""
        self.resumed_from = resume_from
        self.last_step = max(checkpoint_step(Path(resume_from)) or 0, last_step(self.folder.events_file))

    def begin_from_base(self) -> None:
        """A leg that starts over from the base model: step 0, the run's earlier legs abandoned but kept."""
        self.from_base = True

    def _on_stop_request(self, reason: str) -> None:
        if self.main:
            self.emit(StopRequested(reason=reason, step=self.last_step))
            self.folder.write_state(status=Status.STOPPING)

    def _on_force(self, reason: str) -> None:
        self.finish(Status.STOPPED, reason)

    def finish(self, status: Status, reason: str | None) -> None:
        if self.finished:
            return
        self.finished = True
        if status is Status.FAILED and self.resumed_from and not self.trained:
            reason = f"resume from {self.resumed_from} failed: {reason or 'see trainer.log'}"
        self.end_reason = reason
        if self.main:
            release_reserve(self.folder.path)  # the run is ending: its last words may need the room (run/disk.py)
            self.folder.record_end(status, reason, self.last_step, emit=self.emit)

    def close(self) -> None:
        for writer in (self.writer, self.samples):
            if writer is not None:
                writer.close()
