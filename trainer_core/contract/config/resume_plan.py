"""Resuming a run in its own folder: from which checkpoint, to which step, and a record that stays true.

A resume must never make things worse than they were: it takes the newest *complete* checkpoint
(``trainer_core.contract.run.checkpoints``) and says which newer ones it passed over and why; it moves those
out of the Trainer's sight instead of deleting them; it refuses (``ConfigError``) before writing
anything; and what it writes keeps the run's history readable: ``before_resume`` in state.json holds the
status, step and reason the run had, so a resume that then fails cannot pass for the run's whole story.
``grpo_tui``'s ``supervisor.plan_resume`` checks the run's processes and calls these two steps; the run's root calls
them for a remedy's rollback (``trainer_core/root/remedies.py``), which is why they live in the shared contract.

A resume may change the settings ``trainer_core.contract.config.resume_changes`` names (``ResumeChange``):
config.yaml then holds the new settings, state.json the config ``revision`` and ``resume_change`` (what
changed from what, who asked and why, from which step to which checkpoint), which the trainer records in the
leg's ``run_started`` and, when the leg goes back before the run's last step, a ``rewound`` event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from trainer_core.contract.config.placement import Placement
from trainer_core.contract.config.resume_changes import apply_sets
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.health.remedy_plan import BASE
from trainer_core.contract.run.checkpoints import CheckpointCheck, check_checkpoints, move_aside, newest
from trainer_core.contract.run.event_log import last_step
from trainer_core.contract.run.folder import RunFolder, write_bytes_atomic, write_json_atomic
from trainer_core.contract.run.ledger import resolve_checkpoint
from trainer_core.contract.run.status import Status


@dataclass
class ResumeChange:
    """What a resume changes and who asked: ``sets`` from ``resume_changes.parse_sets``; ``by`` user, rule, mcp
    or viewer; ``reason`` and ``rule`` (a remedy's health rule) go into the ``rewound`` event."""

    sets: dict[str, str] = field(default_factory=dict)
    by: str = "user"
    reason: str | None = None
    rule: str | None = None


@dataclass
class ResumePlan:
    """What a resume will do; ``skipped`` and ``placement`` are filled in once it is applied."""

    run_id: str
    from_status: Status
    reached: int
    checkpoint: CheckpointCheck
    max_steps: int
    torn: list[CheckpointCheck] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    placement: Placement | None = None
    changes: dict[str, dict] = field(default_factory=dict)
    revision: int = 0
    change: ResumeChange = field(default_factory=ResumeChange)

    @property
    def rewinds(self) -> bool:
        """The leg starts before the run's last step: the steps after the checkpoint are abandoned."""
        return self.checkpoint.step < self.reached

    @property
    def record(self) -> dict:
        """state.json's ``resume_change``: what the trainer writes into the leg's ``rewound`` and ``run_started``."""
        return {
            "from_step": self.reached,
            "to_step": self.checkpoint.step,
            "checkpoint": self.checkpoint.name,
            "by": self.change.by,
            "reason": self.change.reason,
            "rule": self.change.rule,
            "changes": self.changes,
            "revision": self.revision,
        }

    @property
    def from_base(self) -> bool:
        """The leg starts over from the base model (step 0): fresh weights and optimizer, the run's history kept."""
        return self.checkpoint.name == BASE and self.checkpoint.step == 0

    @property
    def resume_from(self) -> str | None:
        return None if self.from_base else f"checkpoints/{self.checkpoint.name}"

    @property
    def starts_from(self) -> str:
        return "the base model" if self.from_base else f"checkpoints/{self.checkpoint.name}"

    @property
    def message(self) -> str:
        """What the user is told: the checkpoint, the target step, and every checkpoint passed over."""
        step = self.checkpoint.step
        to = f"to step {self.max_steps}" if self.max_steps > 0 else "until its epochs end"
        lines = [f"resuming run {self.run_id} ({self.from_status} at step {self.reached}) from {self.starts_from} {to}"]
        if self.reached > step:
            again = f"step {step + 1} is" if self.reached == step + 1 else f"steps {step + 1}-{self.reached} are"
            lines[0] += f"; {again} trained again"
        for name, change in self.changes.items():
            lines.append(f"{name}: {change['from']!r} -> {change['to']!r} (revision {self.revision})")
        for skipped in self.skipped or [
            {"name": c.name, "problems": list(c.problems + c.training_problems)} for c in self.torn
        ]:
            moved = f" (moved to {skipped['moved_to']})" if skipped.get("moved_to") else ""
            lines.append(f"skipped {skipped['name']}: {'; '.join(skipped['problems'])}{moved}")
        return "\n".join(lines)


def chosen_checkpoint(folder: RunFolder, which: str, checks: list[CheckpointCheck]) -> CheckpointCheck:
    """``--checkpoint best|last|STEP|base`` as the complete checkpoint it names (the ledger, run/ledger.py); ``base``:
    the base model, as the checkpoint of step 0."""
    if which == BASE:
        return CheckpointCheck(Path(BASE), 0)
    if which == "final":
        raise ConfigError(
            "checkpoint",
            "final/ holds the model alone, without the optimizer and scheduler a resume needs: resume from best, "
            "last or a step (grpo-tui checkpoints RUN lists them).",
        )
    try:
        entry = resolve_checkpoint(folder.path, which)
    except ValueError as exc:
        raise ConfigError("checkpoint", str(exc)) from None
    found = next((c for c in checks if c.name == entry.name), None)
    if found is None or not found.complete:
        why = found.why() if found is not None else "not found"
        raise ConfigError("checkpoint", f"{entry.name} of run {folder.run_id} cannot be resumed from: {why}.")
    return found


def choose_checkpoint(
    folder: RunFolder,
    status: Status,
    max_steps: int | None,
    checkpoint: str | None = None,
    change: ResumeChange | None = None,
) -> tuple[ResumePlan, RunConfig]:
    """The plan and the config the resumed leg runs with: from the newest complete checkpoint, or the one
    ``checkpoint`` names (best, last or a step), with ``change``'s settings. Raises ConfigError; writes nothing.
    A completed run goes on without a higher ``max_steps`` only from a checkpoint before its last step."""
    change = change or ResumeChange()
    checks = check_checkpoints(folder.checkpoints_dir)
    picked, _ = (chosen_checkpoint(folder, checkpoint, checks), []) if checkpoint else newest(checks)
    if picked is None:
        if not checks:
            raise ConfigError(
                "resume",
                f"run {folder.run_id} has no checkpoint to resume from (checkpoints/ is empty); "
                "start a new run instead.",
            )
        why = "; ".join(c.describe() for c in reversed(checks))
        raise ConfigError(
            "resume",
            f"run {folder.run_id} has no complete checkpoint to resume from ({why}); start a "
            "new run instead (`grpo-tui merge --checkpoint N` still exports one whose weights are whole).",
        )
    state = folder.read_state()
    reached = max(int(state.get("last_step") or 0), last_step(folder.events_file))
    config, changes = apply_sets(RunConfig.load(folder.config_file), change.sets)
    if max_steps is None and "max_steps" in changes:
        max_steps = config.max_steps
    step = picked.step
    where = f"step {step} of {picked.name}, " + (
        "the checkpoint asked for" if checkpoint else "the newest complete checkpoint"
    )
    if max_steps is not None:
        if max_steps <= step:
            raise ConfigError("max_steps", f"--max-steps {max_steps} is not above {where}; pass a larger --max-steps.")
        config.max_steps = max_steps
    elif status is Status.COMPLETED and not (checkpoint and step < reached and config.max_steps > step):
        raise ConfigError(
            "resume",
            f"run {folder.run_id} is completed at step {reached}; to continue it, pass "
            f"--max-steps N above {step} (its newest complete checkpoint is {picked.name}).",
        )
    elif 0 < config.max_steps <= step:
        raise ConfigError(
            "max_steps",
            f"run {folder.run_id}'s max_steps ({config.max_steps}) is not above {where}; "
            "pass --max-steps N to go further.",
        )
    torn = [c for c in checks if not c.complete and (not checkpoint or c.step > step)]
    revision = int(state.get("revision") or 0) + bool(changes)
    plan = ResumePlan(
        folder.run_id, status, reached, picked, config.max_steps, torn, changes=changes, revision=revision
    )
    plan.change = change
    return plan, config


def apply_resume(folder: RunFolder, plan: ResumePlan, config: RunConfig) -> None:
    """Write the resume: config.yaml, torn checkpoints moved aside, state ``starting`` with what it was before.

    If a write fails (a full disk), config.yaml and state.json are put back as they were and the error is
    a ConfigError: the run stays as it was, never ``starting`` with nothing to start it. Every write is
    atomic (``write_bytes_atomic``), so neither file is ever left half written."""
    state = folder.read_state()
    old_config = folder.config_file.read_bytes()
    try:
        folder.save_config(config)
        for check in plan.torn:
            moved = move_aside(check)
            plan.skipped.append(
                {
                    "name": check.name,
                    "problems": [*check.problems, *check.training_problems],
                    "moved_to": str(moved.relative_to(folder.path)),
                }
            )
        folder.stop_file.unlink(missing_ok=True)
        if plan.from_status is Status.LOST:  # the state still says live; the run folder now records that it ended
            folder.write_state(status=Status.FAILED, exit_reason="lost")
        before = {
            "status": str(plan.from_status),
            "last_step": plan.reached,
            "exit_reason": "lost" if plan.from_status is Status.LOST else state.get("exit_reason"),
            "ended": state.get("ended"),
            "max_steps": state.get("max_steps"),
        }
        folder.write_state(
            status=Status.STARTING,
            resume_from=plan.resume_from,
            ended=None,
            exit_reason=None,
            restarts=int(state.get("restarts") or 0) + 1,
            resume_skipped=plan.skipped,
            before_resume=before,
            revision=plan.revision,
            resume_change=plan.record,
            remedy_due=None,  # a remedy's rollback not carried out (no root took it) is not this resume's
        )
    except OSError as exc:
        _restore(folder, state, old_config)
        raise ConfigError(
            "resume", f"cannot prepare the resume of run {folder.run_id}: {exc}; the run is left as it was."
        ) from None


def _restore(folder: RunFolder, state: dict, config: bytes) -> None:
    for restore in (
        lambda: write_bytes_atomic(folder.config_file, config),
        lambda: write_json_atomic(folder.state_file, state),
    ):
        try:
            restore()
        except OSError:
            pass
