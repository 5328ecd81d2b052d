"""The headless GRPO runner: RunConfig in, a live run folder out.

``train(config)`` validates, creates the run folder, then imports the heavy stack (torch, transformers,
TRL) and runs ``GRPOTrainer`` with the event-stream callback. Whatever happens — completion, a stop from
outside, a crash in the user's environment — the run folder ends with a final state and a
``run_finished`` event, and the events already written stay. Only the main process writes.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

from .config import RunConfig
from .environments import EnvError
from .events import EventWriter
from .run_folder import RunFolder
from .stopping import StopBeforeTraining, StopController


@dataclass
class RunResult:
    run_id: str
    path: Path
    status: str
    reason: str | None
    last_step: int

    @property
    def ok(self) -> bool:
        return self.status in ("completed", "stopped")


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


def _world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def prepare_folder(config: RunConfig, runs_dir=None, run_id: str | None = None, run_dir=None) -> RunFolder:
    """The run folder for this process: given (``run_dir``), or created by rank 0 and shared with the others."""
    if run_dir:
        folder = RunFolder(Path(run_dir))
        if _rank() == 0 and not folder.config_file.exists():
            folder.save_config(config)
        return folder
    if _world_size() > 1 and not run_id:
        import torch
        import torch.distributed as dist
        from accelerate import PartialState

        PartialState(cpu=not torch.cuda.is_available())
        box = [None]
        if _rank() == 0:
            box[0] = str(RunFolder.create(runs_dir).path)
        dist.broadcast_object_list(box, src=0)
        folder = RunFolder(Path(box[0]))
    elif _rank() == 0:
        folder = RunFolder.create(runs_dir, run_id)
    else:
        folder = RunFolder(Path(runs_dir or "runs") / run_id)
        for _ in range(600):
            if folder.path.exists():
                break
            time.sleep(0.1)
    if _rank() == 0:
        folder.save_config(config)
    return folder


def train(config: RunConfig, runs_dir=None, *, run_id: str | None = None, run_dir=None, echo: bool = False) -> RunResult:
    """Run GRPO in this process and return how it ended. Raises ConfigError before anything heavy."""
    config.validate(world_size=_world_size())
    folder = prepare_folder(config, runs_dir, run_id, run_dir)
    return run_in_folder(config, folder, echo=echo)


class _Run:
    """One process's share of a run: writes (on rank 0), the stop controller and the final record."""

    def __init__(self, config: RunConfig, folder: RunFolder, echo: bool):
        self.config = config
        self.folder = folder
        self.echo = echo
        self.main = _rank() == 0
        self.writer = EventWriter(folder.events_file) if self.main else None
        self.samples = None
        self.last_step = 0
        self.finished = False
        self.stopper = StopController(folder.stop_file, self._on_stop_request, self._on_force)

    def emit(self, type: str, **fields) -> None:
        if self.writer is not None:
            self.writer.emit(type, **fields)

    def _on_stop_request(self, reason: str) -> None:
        if self.main:
            self.emit("stop_requested", reason=reason, step=self.last_step)
            self.folder.write_state(status="stopping")

    def _on_force(self, reason: str) -> None:
        self.finish("stopped", reason)

    def finish(self, status: str, reason: str | None) -> None:
        if self.finished:
            return
        self.finished = True
        if self.main:
            self.folder.record_end(status, reason, self.last_step, emit=self.emit)


def run_in_folder(config: RunConfig, folder: RunFolder, *, echo: bool = False) -> RunResult:
    run = _Run(config, folder, echo)
    previous = folder.read_state()
    resume_from = previous.get("resume_from")
    if run.main:
        state = folder.initial_state()
        resumed = {}
        if resume_from:
            resumed = {"resumed_from": resume_from}
            folder.write_state(started=previous.get("started", state["started"]), resumed_at=state["started"])
        run.emit(
            "run_started", run_id=folder.run_id, pid=state["pid"], host=state["host"], world_size=_world_size(),
            project_name=config.project_name, model=config.model, max_steps=config.max_steps, **resumed,
        )
        from .health import config_warnings

        for warning in config_warnings(config.rl_kl_coef, config.rl_num_generations):
            run.emit("warning", **warning.to_event())
    run.stopper.install()
    status, reason = "failed", None
    try:
        status, reason = _train(config, run, resume_from)
    except StopBeforeTraining as exc:
        status, reason = "stopped", f"{exc} before training started"
    except EnvError as exc:
        reason = str(exc).splitlines()[0]
        run.emit("error", kind="environment", message=str(exc), traceback=exc.user_traceback or traceback.format_exc(),
                 case=exc.case, step=run.last_step)
        print(f"error: {exc}", file=sys.stderr)
        if exc.user_traceback:
            print(exc.user_traceback, file=sys.stderr)
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        tb = traceback.format_exc()
        run.emit("error", kind="exception", message=reason, traceback=tb, step=run.last_step)
        print(tb, file=sys.stderr)
    finally:
        run.finish(status, reason)
        run.stopper.uninstall()
        if run.writer is not None:
            run.writer.close()
        if run.samples is not None:
            run.samples.close()
    return RunResult(folder.run_id, folder.path, status, reason, run.last_step)


def _train(config: RunConfig, run: _Run, resume_from: str | None = None) -> tuple[str, str | None]:
    from transformers.utils import logging as hf_logging

    from .trl_setup import build_trainer

    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
    trainer = build_trainer(config, run)
    if run.main:
        from .provenance import write_provenance

        write_provenance(run.folder, config)
        run.folder.write_state(status="running", max_steps=trainer.args.max_steps)
    checkpoint = str(run.folder.path / resume_from) if resume_from else None
    trainer.train(resume_from_checkpoint=checkpoint)
    run.last_step = trainer.state.global_step
    if run.stopper.reason is not None:
        return "stopped", run.stopper.reason
    final = run.folder.path / "final"
    trainer.save_model(str(final))
    if run.main:
        trainer.processing_class.save_pretrained(str(final))
        run.emit("checkpoint", step=run.last_step, path="final", final=True)
    return "completed", None
