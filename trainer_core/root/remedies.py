"""The root's half of a remedy: carry out the rollback a leg stopped for, and start the next leg.

A leg that a remedy ended (``training/remedy_trigger.py``) stops with its reason and leaves the decision in
state.json's ``remedy_due``: the rule, the checkpoint to go back to and the settings to resume with. The run's
root, which outlives its trainer, prepares the resume from that checkpoint with those settings as a revision
by ``rule`` (the same plan and writes as ``grpo-tui launch --resume``: ``contract/config/resume_plan.py``) and
starts the trainer again in the same run folder; the new leg writes the ``rewound`` event. On one box, over SSH
and on Slurm alike, since the root is where the run is. Nothing is resumed when a stop was asked for meanwhile
(a user's stop outranks a rule's remedy) or when the leg ended otherwise (failed).
"""

from __future__ import annotations

import sys

from trainer_core.contract.config.resume_plan import ResumeChange, ResumePlan, apply_resume, choose_checkpoint
from trainer_core.contract.config.run_config import ConfigError
from trainer_core.contract.health.remedy_plan import BASE
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status


def resume_due(folder: RunFolder, stop_asked: bool) -> ResumePlan | None:
    """Prepare the resume a remedy asked for (the plan written to the run folder), or None: no remedy is due, a
    stop was asked for, the leg did not end stopped, or the resume cannot be prepared (said on stderr, which is
    trainer.log, and in the run's exit reason)."""
    state = folder.read_state()
    due = state.get("remedy_due")
    if not isinstance(due, dict):
        return None
    folder.write_state(remedy_due=None)  # taken once, whatever happens next
    status = Status.parse(state.get("status"))
    if stop_asked or folder.stop_file.exists() or status is not Status.STOPPED:
        return None
    changes = due.get("changes")
    changes = changes if isinstance(changes, dict) else {}
    change = ResumeChange(
        sets={str(k): _text(v) for k, v in changes.items()},
        by="rule",
        reason=str(due.get("why") or "") or None,
        rule=str(due.get("rule") or "") or None,
    )
    try:
        which = BASE if due.get("checkpoint") == BASE else str(due.get("step"))
        plan, config = choose_checkpoint(folder, Status.STOPPED, None, checkpoint=which, change=change)
        apply_resume(folder, plan, config)
    except ConfigError as exc:
        why = f"the remedy for {change.rule} could not roll back: {exc}"
        print(f"remedy: {why}", file=sys.stderr, flush=True)
        folder.write_state(exit_reason=why)
        return None
    print(f"remedy: {plan.message}", file=sys.stderr, flush=True)
    return plan


def _text(value: object) -> str:
    """A setting's value as ``--set`` would spell it (``resume_changes`` reads text into the field's type)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)
