"""The headless GRPO runner: RunConfig in, a live run folder out.

``train(config)`` validates, creates the run folder, then imports the heavy stack (torch, transformers,
TRL) and runs ``GRPOTrainer`` with the event-stream callback. Whatever happens — completion, a stop from
outside, a crash in the user's environment — the run folder ends with a final state and a
``run_finished`` event, and the events already written stay. Only the main process writes (and, with no
root process above it, sends the run's alerts: ``alerting/notify.py``). A full disk too: the write that failed is
named (``trainer_core/contract/run/disk.py``), and the run's reserve file gives back the room to record it.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

from trainer_core.alerting import notify
from trainer_core.contract.config.disk_estimate import preflight, preflight_warning, require_room
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.health.monitor import config_warnings
from trainer_core.contract.run.checkpoints import check_checkpoint, torn_checkpoint_warning
from trainer_core.contract.run.disk import disk_fault, last_complete_checkpoint, make_reserve, release_reserve
from trainer_core.contract.run.events import USER_MISTAKE, Checkpoint, Error, ErrorKind, Rewound, RunStarted
from trainer_core.contract.run.folder import RunFolder, resolve_runs_dir
from trainer_core.contract.run.json_values import text_or_none
from trainer_core.contract.run.status import Status
from trainer_core.environment.user_code import UserCodeError, user_traceback
from trainer_core.training.run_context import RunContext, rank, world_size
from trainer_core.training.stopping import StopBeforeTraining


@dataclass
class RunResult:
    run_id: str
    path: Path
    status: Status
    reason: str | None
    last_step: int
    bad_input: bool = False  # failed on a mistake of the user's found before training (exit 2, no traceback of ours)

    @property
    def ok(self) -> bool:
        return self.status in (Status.COMPLETED, Status.STOPPED)


def prepare_folder(config: RunConfig, runs_dir=None, run_id: str | None = None, run_dir=None) -> RunFolder:
    """The run folder for this process: given (``run_dir``), or created by rank 0 and shared with the others."""
    if run_dir:
        folder = RunFolder(Path(run_dir))
        if rank() == 0 and not folder.config_file.exists():
            folder.save_config(config)
        return folder
    if world_size() > 1 and not run_id:
        import torch
        import torch.distributed as dist
        from accelerate import PartialState

        PartialState(cpu=not torch.cuda.is_available())
        box: list[str | None] = [None]
        if rank() == 0:
            box[0] = str(RunFolder.create(runs_dir).path)
        dist.broadcast_object_list(box, src=0)
        path = box[0]
        assert path is not None  # rank 0's folder, broadcast to every rank
        folder = RunFolder(Path(path))
    elif rank() == 0:
        folder = RunFolder.create(runs_dir, run_id)
    else:
        assert run_id is not None  # a rank above 0 runs with world_size > 1: a run without an id was handled above
        folder = RunFolder(Path(runs_dir or "runs") / run_id)
        for _ in range(600):
            if folder.path.exists():
                break
            time.sleep(0.1)
    if rank() == 0:
        folder.save_config(config)
    return folder


def train(
    config: RunConfig, runs_dir=None, *, run_id: str | None = None, run_dir=None, echo: bool = False
) -> RunResult:
    """Run GRPO in this process and return how it ended. Raises ConfigError before anything heavy."""
    config.validate(world_size=world_size())
    if not run_dir:  # a launched run was checked by its launcher (grpo_tui's create_run)
        require_room(config, resolve_runs_dir(runs_dir))
    folder = prepare_folder(config, runs_dir, run_id, run_dir)
    # no root process here: this one sends the run's alerts (alerting/notify.py), as a launched run's root would
    notifier = notify.safe_start(folder, config) if rank() == 0 else None
    try:
        return run_in_folder(config, folder, echo=echo)
    finally:
        if notifier is not None:
            notifier.close()


def run_in_folder(config: RunConfig, folder: RunFolder, *, echo: bool = False) -> RunResult:
    run = RunContext(config, folder, echo)
    previous = folder.read_state()
    resume_from = previous.get("resume_from")
    change = _resume_change(previous)
    # a leg that goes back to the base model: no checkpoint to load, the run's history kept (a rewind to step 0)
    from_base = not resume_from and change.get("to_step") == 0
    again = bool(resume_from) or from_base
    if resume_from:
        run.begin_resume(resume_from)
    elif from_base:
        run.begin_from_base()
    if run.main:
        _record_leg_start(run, previous, change, again)
    run.stopper.install()
    status, reason, trainer, bad_input = Status.FAILED, None, None, False
    try:
        trainer = _setup(config, run, resume_from)
        status, reason = _fit(trainer, run, resume_from)
    except StopBeforeTraining as exc:
        status, reason = Status.STOPPED, f"{exc} before training started"
    except ConfigError as exc:  # a setting only the trainer can judge (held-out metrics): the user's to fix
        reason, bad_input = str(exc), trainer is None
        run.emit(Error(kind=ErrorKind.EXCEPTION, message=reason, step=run.last_step, extra=_mistake(bad_input)))
        print(f"error: {exc}", file=sys.stderr)
    except UserCodeError as exc:  # the user's environment, dataset or tools: their frames only, never ours
        reason, bad_input = str(exc).splitlines()[0], trainer is None
        shown = user_traceback(exc)
        run.emit(
            Error(
                kind=ErrorKind.ENVIRONMENT,
                message=str(exc),
                traceback=shown,
                case=exc.case,
                step=run.last_step,
                extra=_mistake(bad_input),
            )
        )
        print(f"error: {exc}", file=sys.stderr)
        if shown:
            print(shown, file=sys.stderr)
    except Exception as exc:
        tb = traceback.format_exc()
        fault = disk_fault(exc, folder.path)
        if fault is not None:
            reason = _record_disk_fault(run, fault, tb)
        else:
            reason = f"{type(exc).__name__}: {exc}"
            run.emit(Error(kind=ErrorKind.EXCEPTION, message=reason, traceback=tb, step=run.last_step))
            print(tb, file=sys.stderr)
    finally:
        _close_environments(trainer)
        run.finish(status, reason)
        run.stopper.uninstall()
        run.close()
    return RunResult(folder.run_id, folder.path, status, run.end_reason or reason, run.last_step, bad_input)


def _record_leg_start(run: RunContext, previous: dict, change: dict, again: bool) -> None:
    """Rank 0's record of a leg's start: its times, the rewind it makes, ``run_started``, and the warnings a start
    gives (torn checkpoints passed over, the config's, the disk's room)."""
    config, folder, resume_from = run.config, run.folder, previous.get("resume_from")
    skipped = previous.get("resume_skipped") or None if resume_from else None
    state = folder.initial_state()
    make_reserve(folder.path)  # room for the end of the run on a full disk (run/disk.py)
    if again:
        folder.write_state(started=previous.get("started", state["started"]), resumed_at=state["started"])
    rewind = rewound_event(change)
    if rewind is not None:
        run.emit(rewind)
    run.emit(
        RunStarted(
            run_id=folder.run_id,
            pid=state["pid"],
            host=state["host"],
            world_size=world_size(),
            project_name=config.project_name,
            model=config.model,
            max_steps=config.max_steps,
            resumed_from=resume_from,
            restart=previous.get("restarts") if again else None,
            skipped_checkpoints=skipped,
            revision=change.get("revision") if change.get("changes") else None,
            changes=change.get("changes") or None,
            by=text_or_none(change.get("by")) or None,
            reason=text_or_none(change.get("reason")) or None,
        )
    )
    if change:  # recorded once: a requeued or restarted leg does not rewind again
        folder.write_state(resume_change=None)
    if skipped and resume_from:  # skipped checkpoints come only with a resume
        run.emit(torn_checkpoint_warning(skipped, resume_from, run.last_step))
    for warning in config_warnings(config.rl_kl_coef, config.rl_num_generations, use_vllm=config.use_vllm):
        run.emit(warning)
    room = None if again else preflight(config, folder.path.parent)
    if room is not None and room.verdict in ("tight", "no_room"):
        run.emit(preflight_warning(room))


def _resume_change(state: dict) -> dict:
    """state.json's ``resume_change`` (written when the resume was prepared), or {} when absent or not an object."""
    change = state.get("resume_change")
    return change if isinstance(change, dict) else {}


def rewound_event(change: dict, *, by: str | None = None, reason: str | None = None, rule: str | None = None):
    """The ``rewound`` event of a leg that starts from a checkpoint before the run's last step (``change``: a
    resume's record, ``resume_change`` in state.json; ``by``, ``reason``, ``rule`` override who asked and why),
    or None when the leg goes on from where the run was."""
    try:
        from_step, to_step = int(change["from_step"]), int(change["to_step"])
    except (KeyError, TypeError, ValueError):
        return None
    if to_step >= from_step:
        return None
    changes = change.get("changes")
    return Rewound(
        from_step=from_step,
        to_step=to_step,
        checkpoint=str(change.get("checkpoint") or ("base" if to_step == 0 else f"checkpoint-{to_step}")),
        reason=reason if reason is not None else change.get("reason"),
        by=by or change.get("by") or "user",
        rule=rule if rule is not None else change.get("rule"),
        changes=changes if isinstance(changes, dict) else {},
        revision=int(change.get("revision") or 0),
    )


def _close_environments(trainer) -> None:
    """Call the environment's ``close()`` on every per-rollout instance the run made (and the eval's); what
    raises is one line in trainer.log: the run's outcome is decided already."""
    from trainer_core.agents.episodes import EpisodeFactory

    factories = getattr(trainer, "environment_factories", None) or {}
    for factory in factories.values():
        if isinstance(factory, EpisodeFactory):
            for problem in factory.close():
                print(f"warning: {problem}", file=sys.stderr, flush=True)


def _mistake(at_start: bool) -> dict:
    """The error event's extra fields: a mistake found before training is flagged as the user's to fix (the
    run's processes exit 2 and ``grpo-tui train`` says so), one found later is a crash like any other."""
    return {USER_MISTAKE: True} if at_start else {}


def _record_disk_fault(run: RunContext, fault, tb: str) -> str:
    """A write failed for lack of space (or a disk refusing it): free the reserve, then write the error, the
    end of the run and state.json, and only then the traceback to trainer.log (it matters least)."""
    release_reserve(run.folder.path)
    checkpoint = last_complete_checkpoint(run.folder.path)
    reason = fault.describe(run.folder.path, checkpoint)
    run.emit(
        Error(
            kind=fault.kind,
            message=reason,
            traceback=tb,
            step=run.last_step,
            extra=fault.evidence(run.folder.path, checkpoint),
        )
    )
    run.finish(Status.FAILED, reason)
    try:
        print(f"{tb}\nerror: {reason}", file=sys.stderr, flush=True)
    except OSError:
        pass
    return reason


def _setup(config: RunConfig, run: RunContext, resume_from: str | None = None):
    """The trainer, built: the model, the environment, its dataset and tools. What fails here (an UserCodeError, a
    ConfigError) is a mistake in what the user gave, found before any training."""
    from transformers.utils import logging as hf_logging

    from trainer_core.training.trl_setup import build_trainer

    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
    if resume_from:  # checked when the resume was prepared; a torn one must fail plainly, before the model loads
        check = check_checkpoint(run.folder.path / resume_from)
        if not check.complete:
            raise ValueError(
                f"{resume_from} is incomplete: {check.why()}; resume again to take the newest complete one"
            )
    trainer = build_trainer(config, run)
    if run.main:
        from trainer_core.training.provenance import write_provenance

        write_provenance(run.folder, config)
        run.folder.write_state(status=Status.RUNNING, max_steps=trainer.args.max_steps)
    return trainer


def _fit(trainer, run: RunContext, resume_from: str | None = None) -> tuple[Status, str | None]:
    checkpoint = str(run.folder.path / resume_from) if resume_from else None
    trainer.train(resume_from_checkpoint=checkpoint)
    run.last_step = trainer.state.global_step
    if run.stopper.reason is not None:
        return Status.STOPPED, run.stopper.reason
    # written beside final/ and swapped in: a save cut short never leaves a torn final/, and a resumed
    # completed run keeps its earlier final/ until this one is whole
    staging = run.folder.path / FINAL_STAGING
    if run.main and staging.exists():
        shutil.rmtree(staging)
    trainer.accelerator.wait_for_everyone()
    trainer.save_model(str(staging))
    trainer.accelerator.wait_for_everyone()
    if run.main:
        processing_class = trainer.processing_class
        assert processing_class is not None  # build_trainer gives the trainer its tokenizer
        processing_class.save_pretrained(str(staging))
        replace_folder(staging, run.folder.path / "final")
        run.emit(Checkpoint(step=run.last_step, path="final", final=True))
    return Status.COMPLETED, None


FINAL_STAGING = ".final-partial"


def replace_folder(new: Path, target: Path) -> None:
    """Put ``new`` in ``target``'s place; the old one is removed only once the new one is there."""
    old = target.with_name(f".{target.name}-old")
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        os.replace(target, old)
    os.replace(new, target)
    shutil.rmtree(old, ignore_errors=True)
