"""The choice of where a remedy rolls a run back to, and with which settings, on plain ledgers and warnings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rewind_fixtures import make_rewound_run
from tests.run_fixtures import TASK_METRIC, make_eval_run
from trainer_core.contract.health.monitor import Thresholds, replay
from trainer_core.contract.health.remedy_plan import (
    BASE,
    RemedySettings,
    Rollback,
    StopRun,
    onset_step,
    plan_for_run,
    plan_remedy,
)
from trainer_core.contract.run.events import HealthWarning, Metrics, RewindBy, Rewound, warning
from trainer_core.contract.run.ledger import LedgerEntry
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

KL = HealthRule.KL_EXPLOSION
SETTINGS = RemedySettings(rules={"kl_explosion": "rollback", "reward_task_divergence": "rollback"})


def entry(step: int, *marks: str, **metrics: float) -> LedgerEntry:
    return LedgerEntry(f"checkpoint-{step}", Path(f"checkpoints/checkpoint-{step}"), step, 1, dict(metrics), marks)


def kl_warning(step: int, severity: Severity = Severity.CRITICAL) -> HealthWarning:
    return warning(KL, severity, step, "KL exploded", {"kl_last_steps": [0.6, 1.5, 3.0], "threshold": 0.5})


def remedy(to_step: int, rule: str = "kl_explosion", by: RewindBy = RewindBy.RULE) -> Rewound:
    return Rewound(from_step=to_step + 15, to_step=to_step, checkpoint=f"checkpoint-{to_step}", by=by, rule=rule)


def plan(warn: HealthWarning, ledger, rewinds=(), settings=SETTINGS, **kw):
    return plan_remedy(warn, settings, ledger, rewinds, lr=1e-4, **kw)


def test_the_onset_is_the_first_step_the_evidence_judged():
    assert onset_step(kl_warning(30)) == 28
    assert onset_step(kl_warning(30), logged_steps=[5, 10, 15, 20, 25, 30]) == 20
    growth = warning(KL, Severity.WARN, 30, "KL grew", {"kl_last_steps": [0.1, 0.2, 0.45], "kl_3_steps_ago": 0.05})
    assert onset_step(growth) == 27
    spike = warning(HealthRule.GRAD_NORM_SPIKE, Severity.CRITICAL, 30, "spike", {"grad_norm": 50.0})
    assert onset_step(spike) == 30


def test_the_onset_of_a_real_kl_warning_comes_from_its_evidence():
    kl = [0.02] * 20 + [0.3, 0.7, 1.2, 2.5, 4.0]
    events = [Metrics(step=i + 1, values={"kl": v, "reward": 0.3}) for i, v in enumerate(kl)]
    critical = next(w for w in replay(events, Thresholds()) if w.severity is Severity.CRITICAL)
    assert critical.step == 24 and onset_step(critical) == 22


def test_without_evals_the_newest_complete_checkpoint_before_the_onset():
    ledger = [entry(10), entry(20), entry(25, "torn"), entry(30), entry(40)]
    chosen = plan(kl_warning(32), ledger)  # onset 30: checkpoint-30 is not before it
    assert isinstance(chosen, Rollback)
    assert (chosen.checkpoint, chosen.step, chosen.onset) == ("checkpoint-20", 20, 30)
    assert "newest complete checkpoint before the onset of kl_explosion at step 30" in chosen.why


def test_with_evals_the_best_by_the_ranking_metric_before_the_onset():
    ledger = [entry(10, acc=0.4), entry(20, acc=0.7), entry(30, acc=0.5), entry(40, acc=0.9)]
    chosen = plan(kl_warning(40), ledger, metric="acc", base_metrics={"acc": 0.2})
    assert isinstance(chosen, Rollback) and chosen.checkpoint == "checkpoint-20"
    assert "best held-out acc (0.7)" in chosen.why
    unscored = plan(kl_warning(40), ledger, metric="pass@4")
    assert isinstance(unscored, Rollback) and unscored.checkpoint == "checkpoint-30"


def test_a_divergence_goes_back_to_the_eval_peak_not_the_newest():
    ledger = [entry(20, acc=0.5), entry(40, acc=0.8), entry(60, acc=0.6), entry(80, acc=0.4)]
    found = warning(
        HealthRule.REWARD_TASK_DIVERGENCE,
        Severity.CRITICAL,
        80,
        "parted",
        {"metric": "acc", "metric_to": 0.4, "baseline": 0.3, "steps": [40, 60, 80], "values": [0.8, 0.6, 0.4]},
    )
    assert onset_step(found) == 41
    chosen = plan(found, ledger, metric="acc")
    assert isinstance(chosen, Rollback) and (chosen.checkpoint, chosen.step) == ("checkpoint-40", 40)


@pytest.mark.parametrize(
    ("values", "baseline", "acts"),
    [([0.5, 0.45, 0.4], 0.3, True), ([0.5, 0.45, 0.4], None, True), ([0.3, 0.28, 0.29], 0.35, False)],
)
def test_a_divergence_takes_a_remedy_only_when_its_metric_fell_from_above_its_baseline(values, baseline, acts):
    found = warning(
        HealthRule.REWARD_TASK_DIVERGENCE,
        Severity.CRITICAL,
        80,
        "parted",
        {"metric": "acc", "metric_to": values[-1], "baseline": baseline, "steps": [40, 60, 80], "values": values},
    )
    assert SETTINGS.acts_on(found) is acts
    assert isinstance(plan(found, [entry(20, acc=0.5)], metric="acc"), Rollback) is acts


def test_the_base_model_is_the_checkpoint_of_step_zero():
    chosen = plan(kl_warning(8), [entry(10), entry(20)])
    assert isinstance(chosen, Rollback) and (chosen.checkpoint, chosen.step) == (BASE, 0)
    scored = plan(kl_warning(40), [entry(10, acc=0.1), entry(20, acc=0.2)], metric="acc", base_metrics={"acc": 0.3})
    assert isinstance(scored, Rollback) and scored.checkpoint == BASE


def test_a_second_rollback_for_the_same_rule_goes_further_back():
    ledger = [entry(10), entry(20), entry(30), entry(40, "abandoned"), entry(50)]
    first = plan(kl_warning(45), ledger)
    assert isinstance(first, Rollback) and first.step == 30
    second = plan(kl_warning(48), ledger, [remedy(30)])  # the trouble came back right after the rollback
    assert isinstance(second, Rollback) and second.step == 20
    assert "before step 30, where the last rollback for kl_explosion went" in second.why


def test_no_rollback_returns_to_a_step_a_remedy_went_to():
    ledger = [entry(10), entry(20), entry(30)]
    spike = warning(HealthRule.GRAD_NORM_SPIKE, Severity.CRITICAL, 35, "spike", {"grad_norm": 50.0})
    settings = RemedySettings(rules={"grad_norm_spike": "rollback", "kl_explosion": "rollback"}, max_remedies=5)
    chosen = plan(spike, ledger, [remedy(30)], settings=settings)
    assert isinstance(chosen, Rollback) and chosen.step == 20
    by_user = plan(spike, ledger, [remedy(30, by=RewindBy.USER)], settings=settings)
    assert isinstance(by_user, Rollback) and by_user.step == 30  # the user's own rewinds are no remedy


def test_nowhere_to_go_stops_the_run_saying_why():
    stop = plan(
        kl_warning(12),
        [entry(10)],
        [remedy(10), remedy(0)],
        settings=RemedySettings(rules={"kl_explosion": "rollback"}, max_remedies=5),
    )
    assert isinstance(stop, StopRun) and not stop.spent
    assert "nowhere to go" in stop.reason and "before step 0" in stop.reason and "0, 10" in stop.reason


def test_after_max_remedies_the_rule_stops_the_run_saying_they_were_spent():
    stop = plan(kl_warning(90), [entry(10), entry(20)], [remedy(50), remedy(40, rule="loss_spike")])
    assert isinstance(stop, StopRun) and stop.spent
    assert stop.reason.startswith("the remedies were spent: 2 rollbacks of at most 2 (--max-remedies)")
    user_rewinds = [remedy(50, by=RewindBy.USER), remedy(40, by=RewindBy.USER)]
    assert isinstance(plan(kl_warning(90), [entry(10), entry(20)], user_rewinds), Rollback)


@pytest.mark.parametrize(
    ("severity", "wanted", "acts"),
    [("critical", "critical", True), ("warn", "critical", False), ("warn", "warn", True), ("info", "warn", False)],
)
def test_a_remedy_acts_only_at_its_severity(severity, wanted, acts):
    settings = RemedySettings(rules={"kl_explosion": "rollback"}, severity=wanted)
    found = plan(kl_warning(40, Severity(severity)), [entry(10)], settings=settings)
    assert isinstance(found, Rollback) is acts and (found is None) is not acts


def test_a_rule_without_a_remedy_is_left_alone():
    spike = warning(HealthRule.LOSS_SPIKE, Severity.CRITICAL, 35, "spike", {"loss": 5.0})
    assert plan(spike, [entry(10)]) is None


def test_the_new_settings_are_the_scaled_lr_and_the_remedy_set():
    settings = RemedySettings(rules={"kl_explosion": "rollback"}, lr_scale=0.25, changes={"rl_kl_coef": 0.05})
    chosen = plan_remedy(kl_warning(40), settings, [entry(10)], lr=4e-5)
    assert isinstance(chosen, Rollback) and chosen.changes == {"lr": pytest.approx(1e-5), "rl_kl_coef": 0.05}


def test_settings_come_from_a_run_config():
    from trainer_core.contract.config.run_config import RunConfig

    config = RunConfig(
        model="m",
        rl_env_module="e.py",
        rl_env_class="E",
        remedy={"kl_explosion": "rollback"},
        remedy_lr_scale=0.3,
        remedy_set={"rl_kl_coef": 0.2},
        max_remedies=3,
        remedy_severity="warn",
        remedy_keep_bad=True,
    )
    assert RemedySettings.of(config) == RemedySettings(
        {"kl_explosion": "rollback"}, 0.3, {"rl_kl_coef": 0.2}, 3, "warn", True
    )
    assert RemedySettings.of(RunConfig(model="m")) == RemedySettings()


def test_a_run_folder_that_was_rolled_back_for_the_rule_goes_further_back(tmp_path):
    path = make_rewound_run(tmp_path)  # a kl_explosion remedy took it from step 38 back to checkpoint-20
    again = warning(KL, Severity.CRITICAL, 27, "KL exploded again", {"kl_last_steps": [0.6, 1.2, 2.5]})
    chosen = plan_for_run(path, again, SETTINGS, lr=1e-5)
    assert isinstance(chosen, Rollback) and (chosen.checkpoint, chosen.step) == ("checkpoint-10", 10)
    assert f"best held-out {TASK_METRIC}" in chosen.why and chosen.changes == {"lr": 5e-6}
    once = RemedySettings(rules={"kl_explosion": "rollback"}, max_remedies=1)
    spent = plan_for_run(path, again, once, lr=1e-5)
    assert isinstance(spent, StopRun) and spent.spent


def test_a_run_folder_with_evals_goes_back_to_its_best_checkpoint_not_its_newest(tmp_path):
    path = make_eval_run(tmp_path, steps=50)  # the task metric peaks at step 20, then falls
    late = warning(KL, Severity.CRITICAL, 50, "KL exploded", {"kl_last_steps": [0.6, 1.2, 2.5]})
    chosen = plan_for_run(path, late, SETTINGS, lr=1e-5)
    assert isinstance(chosen, Rollback) and (chosen.checkpoint, chosen.step) == ("checkpoint-20", 20)
