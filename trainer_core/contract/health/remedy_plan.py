"""Where a remedy rolls a run back to, and with which settings: one pure decision over the run's ledger.

A rule with a remedy (``--remedy RULE=rollback``) that fires at the configured severity makes the run's root stop the
trainer and resume it from an earlier checkpoint with safer settings. Which checkpoint is the hard part, and it is
decided here, apart from any process, so every case is tested on plain values: the checkpoints before the onset of
the trouble (the warning's evidence says where it started), the best of them on the held-out ranking metric when
there are evals, else the newest complete one; the base model counts as the checkpoint of step 0. A second rollback
for the same rule goes further back than the first, no rollback returns to a step an earlier one went to (so a run
never loops on one step), and after ``max_remedies`` rollbacks, or with nowhere to go, the decision is to stop,
saying why. ``plan_remedy`` decides on values; ``plan_for_run`` reads them from a run folder first (its ledger, its
rewinds, its live history). Stdlib and ``run/`` only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer_core.contract.run.event_log import scan_events
from trainer_core.contract.run.events import Eval, EventType, HealthWarning, Metrics, RewindBy, Rewound
from trainer_core.contract.run.json_values import all_numbers, is_number
from trainer_core.contract.run.ledger import FINAL, LedgerEntry, LedgerEvents, default_metric, eval_of, read_ledger
from trainer_core.contract.run.rewinds import live
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

REMEDY_RULES: tuple[str, ...] = tuple(
    r.value
    for r in (
        HealthRule.KL_EXPLOSION,
        HealthRule.NON_FINITE,
        HealthRule.GRAD_NORM_SPIKE,
        HealthRule.LOSS_SPIKE,
        HealthRule.ENTROPY_COLLAPSE,
        HealthRule.REWARD_TASK_DIVERGENCE,
    )
)
"""The rules a remedy may act on: each says the weights went wrong at a step the evidence names, so an earlier
checkpoint is sound and a smaller step size may avoid the trouble. The others (a plateau, truncation, hacking, a
stall) are not cured by going back."""
REMEDY_ACTIONS: tuple[str, ...] = ("rollback",)
REMEDY_PREFIX = "remedy: "
"""How a leg's stop reason says a remedy ended it to roll the run back (the root resumes it; alerts say a rollback,
not a stop)."""
BASE = "base"
"""The name a rollback to the base model (step 0) gives its checkpoint, as in a ``rewound`` event."""

# the evidence key holding the values of the logged steps a rule judged, the last at the warning's step
_SERIES = {
    HealthRule.KL_EXPLOSION.value: "kl_last_steps",
    HealthRule.ENTROPY_COLLAPSE.value: "entropy_last_steps",
}


@dataclass(frozen=True)
class RemedySettings:
    """A run's remedy settings (RunConfig's ``remedy``, ``remedy_lr_scale``, ``remedy_set``, ``max_remedies``,
    ``remedy_severity``, ``remedy_keep_bad``)."""

    rules: Mapping[str, str] = field(default_factory=dict)
    lr_scale: float = 0.5
    changes: Mapping[str, Any] = field(default_factory=dict)
    max_remedies: int = 2
    severity: str = Severity.CRITICAL.value
    keep_bad: bool = False

    @classmethod
    def of(cls, config: Any) -> RemedySettings:
        """From a RunConfig (any object with its remedy fields)."""
        return cls(
            dict(config.remedy or {}),
            float(config.remedy_lr_scale),
            dict(config.remedy_set or {}),
            int(config.max_remedies),
            str(config.remedy_severity),
            bool(config.remedy_keep_bad),
        )

    def acts_on(self, warning: HealthWarning) -> bool:
        """Whether ``warning`` calls for this run's remedy: its rule has one and it fired at the severity or above."""
        wanted = Severity.WARN if self.severity == Severity.WARN.value else Severity.CRITICAL
        rule, enough = str(warning.rule), warning.severity.rank >= wanted.rank
        return self.rules.get(rule) == "rollback" and enough and strong_evidence(warning)

    @classmethod
    def every_rule(cls, severity: str = Severity.CRITICAL.value) -> RemedySettings:
        """A remedy for every rule that can take one, at ``severity``: what a false-alarm count judges with."""
        return cls({rule: "rollback" for rule in REMEDY_RULES}, severity=severity)


def strong_evidence(warning: HealthWarning) -> bool:
    """Whether a warning's evidence is strong enough to roll back for. A held-out divergence is, when its metric
    fell from a value above its baseline: a metric that never rose above the base model's score has no better
    checkpoint to go back to, and on healthy runs that lag at their baseline it is the rule's usual false alarm."""
    if str(warning.rule) != HealthRule.REWARD_TASK_DIVERGENCE.value:
        return True
    values, base, last = (warning.evidence.get(k) for k in ("values", "baseline", "metric_to"))
    if not isinstance(values, list) or not values or not all_numbers(values) or not is_number(last):
        return False
    return max(values) > last and (not is_number(base) or max(values) > base)


@dataclass(frozen=True)
class Rollback:
    """Go back to ``checkpoint`` (a ledger name, or ``base``) at ``step`` and resume with ``changes``
    (``{SETTING: NEW}``); ``why`` says how it was chosen."""

    rule: str
    checkpoint: str
    step: int
    onset: int
    changes: dict[str, Any]
    why: str


@dataclass(frozen=True)
class StopRun:
    """No rollback: stop the run as ``--stop-on`` does, saying ``reason``; ``spent``: the remedies ran out."""

    rule: str
    reason: str
    spent: bool = False


def onset_step(warning: HealthWarning, logged_steps: Sequence[int] = ()) -> int:
    """The step the trouble a warning reports began at: the first of the logged steps its evidence judged.

    ``logged_steps``: the live history's logged steps up to the warning (when logging skips steps); without them
    every step is taken to be logged. A held-out divergence began after the best of the evals it judged."""
    rule, evidence = str(warning.rule), warning.evidence
    if rule == HealthRule.REWARD_TASK_DIVERGENCE.value:
        steps, values = evidence.get("steps"), evidence.get("values")
        if isinstance(steps, list) and isinstance(values, list) and steps and len(steps) == len(values):
            best = max(range(len(values)), key=lambda i: (values[i], -i))
            return int(steps[best]) + 1
        return warning.step
    series = evidence.get(_SERIES.get(rule, ""))
    count = len(series) if isinstance(series, list) and series else 1
    if rule == HealthRule.KL_EXPLOSION.value and "kl_3_steps_ago" in evidence:
        count = 4  # the growth branch judged the three steps after that one too
    earlier = [s for s in logged_steps if s <= warning.step]
    if len(earlier) >= count and earlier[-1] == warning.step:
        return earlier[-count]
    return max(warning.step - (count - 1), 0)


def plan_remedy(
    warning: HealthWarning,
    settings: RemedySettings,
    ledger: Sequence[LedgerEntry],
    rewinds: Sequence[Rewound] = (),
    *,
    lr: float,
    metric: str | None = None,
    base_metrics: Mapping[str, float] | None = None,
    logged_steps: Sequence[int] = (),
) -> Rollback | StopRun | None:
    """What the run's root does about ``warning``: None (no remedy for it), a ``Rollback`` or a ``StopRun``.

    ``ledger``: the run's checkpoints (run/ledger.py's ``read_ledger``); ``rewinds``: the run's ``rewound`` events
    so far; ``lr``: the learning rate the run trains with now; ``metric``: the held-out ranking metric;
    ``base_metrics``: the base model's held-out figures (the eval of step 0), if any."""
    if not settings.acts_on(warning):
        return None
    rule = str(warning.rule)
    remedies = [r for r in rewinds if r.by == RewindBy.RULE]
    if len(remedies) >= settings.max_remedies:
        return StopRun(
            rule,
            f"the remedies were spent: {len(remedies)} rollback{'s' if len(remedies) != 1 else ''} of at most "
            f"{settings.max_remedies} (--max-remedies), and {rule} fired again at step {warning.step}.",
            spent=True,
        )
    onset = onset_step(warning, logged_steps)
    limit, said = onset, f"before the onset of {rule} at step {onset}"
    same_rule = [r.to_step for r in remedies if r.rule == rule]
    if same_rule and min(same_rule) <= limit:
        limit, said = min(same_rule), f"before step {min(same_rule)}, where the last rollback for {rule} went"
    used = {r.to_step for r in remedies}
    candidates = [
        e
        for e in ledger
        if e.name != FINAL and "torn" not in e.marks and "abandoned" not in e.marks
        if e.step < limit and e.step not in used
    ]
    if 0 < limit and 0 not in used:
        candidates.append(LedgerEntry(BASE, Path(BASE), 0, 0, dict(base_metrics or {})))
    if not candidates:
        been = f"; steps {', '.join(map(str, sorted(used)))} were rolled back to already" if used else ""
        return StopRun(rule, f"a rollback has nowhere to go: no complete checkpoint {said}{been}.")
    scored = [e for e in candidates if metric and e.value(metric) is not None]
    if scored and metric:
        chosen = max(scored, key=lambda e: (e.value(metric), e.step))
        why = f"best held-out {metric} ({chosen.value(metric):.4g}) among the checkpoints {said}"
    else:
        chosen = max(candidates, key=lambda e: e.step)
        why = f"the newest complete checkpoint {said}"
    return Rollback(rule, chosen.name, chosen.step, onset, remedy_changes(settings, lr), why)


def remedy_changes(settings: RemedySettings, lr: float) -> dict[str, Any]:
    """The settings a rollback resumes with: the learning rate times the scale, then the ``remedy_set`` changes."""
    return {"lr": lr * settings.lr_scale, **settings.changes}


def plan_for_run(
    run_path: Path, warning: HealthWarning, settings: RemedySettings, *, lr: float
) -> Rollback | StopRun | None:
    """``plan_remedy`` for the run at ``run_path``: its ledger (abandoned checkpoints marked), its ``rewound``
    events, the logged steps and the base model's eval of its live history, and its ranking metric."""
    run_path = Path(run_path)
    events, _ = scan_events(
        run_path / "events.jsonl", (EventType.METRICS, EventType.EVAL, EventType.REWOUND, EventType.CHECKPOINT)
    )
    current = live(events)
    evals = {e.step: e for e in current if isinstance(e, Eval)}
    ledger = read_ledger(run_path, history=LedgerEvents.of(events))
    return plan_remedy(
        warning,
        settings,
        ledger,
        [e for e in events if isinstance(e, Rewound)],
        lr=lr,
        metric=default_metric(run_path, evals),
        base_metrics=eval_of(evals[0]) if 0 in evals else None,
        logged_steps=[e.step for e in current if isinstance(e, Metrics)],
    )
