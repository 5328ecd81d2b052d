"""The trainer's half of a remedy: when a rule with one fires, decide at once and stop this leg for the root.

A warning that calls for a remedy (``--remedy RULE=rollback``, ``RemedySettings.acts_on``) is judged at the step it
fires, by ``remedy_plan.plan_for_run`` over the run's ledger and rewinds: a ``Rollback`` ends this leg with a
stop whose reason starts ``remedy:`` and leaves the decision in state.json's ``remedy_due`` for the run's root,
which resumes from the chosen checkpoint with the safer settings (``trainer_core/root/remedies.py``); a ``StopRun``
(the remedies are spent, or there is nowhere to go) ends the run as ``--stop-on`` does, saying why. Deciding here,
not in the root, stops the leg at the next step end instead of a poll later, and keeps the leg's end and the
root's resume apart: the root only carries out a decision the run folder holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.health.remedy_plan import (
    REMEDY_PREFIX,
    RemedySettings,
    Rollback,
    StopRun,
    plan_for_run,
)
from trainer_core.contract.run.events import HealthWarning
from trainer_core.contract.run.folder import RunFolder


@dataclass(frozen=True)
class Decision:
    """Stop this leg with ``reason``; ``save``: with a checkpoint of the state it stops in."""

    reason: str
    save: bool


class RemedyTrigger:
    def __init__(self, folder: RunFolder, config: RunConfig):
        self.folder = folder
        self.settings = RemedySettings.of(config)
        self.lr = float(config.lr)

    @property
    def armed(self) -> bool:
        return bool(self.settings.rules)

    def decide(self, warning: HealthWarning) -> Decision | None:
        """None when ``warning`` calls for no remedy; else how this leg stops (``remedy_due`` written first)."""
        if not self.settings.acts_on(warning):
            return None
        plan = plan_for_run(self.folder.path, warning, self.settings, lr=self.lr)
        at = f"{warning.rule} at step {warning.step}"
        if plan is None:
            return None
        if isinstance(plan, StopRun):
            return Decision(f"auto-stop: {at}: {plan.reason}", save=True)
        self.folder.write_state(remedy_due=_due(plan))
        changes = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in plan.changes.items())
        return Decision(
            f"{REMEDY_PREFIX}{at}: rolling back to {plan.checkpoint} ({plan.why}) with {changes}",
            save=self.settings.keep_bad,
        )


def _due(plan: Rollback) -> dict:
    return {
        "rule": plan.rule,
        "checkpoint": plan.checkpoint,
        "step": plan.step,
        "onset": plan.onset,
        "changes": plan.changes,
        "why": plan.why,
    }
