"""reward_task_divergence: the training reward keeps rising while a held-out metric falls or stays at its
baseline, judged on the ``eval`` events alone (health/divergence.py through ``HealthMonitor.feed_eval``)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from bench.health_false_alarms_evals import eval_false_alarms, healthy_eval_sequence
from tests.run_fixtures import SAVE_STEPS, TASK_METRIC, eval_at
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.health.core import Thresholds
from trainer_core.contract.health.monitor import STOPPABLE_RULES, HealthMonitor, replay
from trainer_core.contract.run.events import Eval
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

RULE = HealthRule.REWARD_TASK_DIVERGENCE
VALID: dict[str, Any] = dict(model="m", rl_env_module="env.py", rl_env_class="Env")


def fixture_evals(steps: int) -> list[Eval]:
    return [eval_at(step, steps) for step in range(0, steps + 1, SAVE_STEPS)]


def fired(evals: list[Eval], thresholds: Thresholds | None = None) -> list[tuple[int, Severity]]:
    monitor = HealthMonitor(thresholds)
    return [(w.step, w.severity) for event in evals for w in monitor.feed_eval(event)]


def an_eval(step: int, train_reward: float | None, metric: float, task: bool = True, **extra) -> Eval:
    name = TASK_METRIC if task else "reward"
    return Eval(
        step=step,
        metrics={name: {"mean": metric, "std": 0.1}},
        task_metrics=[TASK_METRIC] if task else [],
        prompts=16,
        base=step == 0,
        train_reward=train_reward,
        **extra,
    )


@pytest.mark.parametrize("steps", [50, 100])
def test_fires_within_two_evals_of_the_fall_and_not_before(steps):
    evals = fixture_evals(steps)
    peak = max(evals, key=lambda e: e.value(TASK_METRIC) or 0).step
    falling = [e.step for e in evals if e.step > peak]
    found = fired(evals)
    assert found, "never fired"
    assert all(step > peak for step, _ in found), found
    assert found[0][0] in falling[:2], (found, falling)
    # once the metric is back at its baseline the warning is critical, once
    assert [severity for _, severity in found].count(Severity.CRITICAL) == 1


def test_the_message_and_evidence_carry_the_numbers():
    monitor = HealthMonitor()
    warnings = [w for event in fixture_evals(50) for w in monitor.feed_eval(event)]
    first = warnings[0]
    assert first.rule is RULE and first.severity is Severity.WARN and first.step == 30
    assert "training reward 0.32→0.60 while held-out answer_is_sentence fell 0.70→0.50 (baseline 0.30)" in (
        first.message
    )
    assert first.advice == RULE.advice and "reward hacking" in first.advice and "--keep-best" in first.advice
    evidence = first.evidence
    assert evidence["metric"] == TASK_METRIC and evidence["steps"] == [10, 20, 30]
    assert (evidence["reward_from"], evidence["reward_to"]) == (0.32, 0.6)
    assert (evidence["metric_from"], evidence["metric_to"], evidence["baseline"]) == (0.7, 0.5, 0.3)
    assert warnings[1].severity is Severity.CRITICAL and warnings[1].evidence["metric_to"] <= 0.3


def test_a_metric_that_stays_at_or_below_its_baseline_while_the_reward_rises_is_critical():
    lagging = ((10, 0.28), (20, 0.30), (30, 0.29))
    evals = [an_eval(0, None, 0.30), *(an_eval(s, 0.2 + s / 100, v) for s, v in lagging)]
    monitor = HealthMonitor()
    [warning] = [w for e in evals for w in monitor.feed_eval(e)]
    assert warning.severity is Severity.CRITICAL and warning.step == 30
    assert "training reward 0.30→0.50 while held-out answer_is_sentence stayed at or below its baseline" in (
        warning.message
    )
    assert "(baseline 0.30)" in warning.message and warning.evidence["baseline"] == 0.3
    # the same metric with a flat training reward is no divergence
    assert fired([an_eval(0, None, 0.30), *(an_eval(s, 0.4, v) for s, v in lagging)]) == []


def test_without_task_metrics_the_held_out_reward_is_judged():
    values = ((10, 0.50), (20, 0.60), (30, 0.40))
    evals = [an_eval(0, None, 0.35, task=False), *(an_eval(s, 0.2 + s / 100, v, task=False) for s, v in values)]
    monitor = HealthMonitor()
    [warning] = [w for e in evals for w in monitor.feed_eval(e)]
    assert warning.evidence["metric"] == "reward" and "over" not in warning.message.split(":")[0]
    assert "training prompts" in warning.message and warning.severity is Severity.WARN


def test_a_healthy_run_whose_metric_rises_with_the_reward_never_fires():
    evals = [an_eval(s, None if s == 0 else 0.2 + s / 200, 0.3 + s / 250) for s in range(0, 201, 10)]
    assert fired(evals) == []


def test_seeded_random_walk_healthy_sequences_rarely_fire():
    alarms, judged = eval_false_alarms(600, seed=7)
    assert judged > 5000
    assert sum(alarms.values()) <= 6, alarms  # at most 1 % of healthy runs (the bench measures 0.1-0.5 %)
    # flat-ish runs: a reward that does not rise never fires, whatever the metric does
    rng = random.Random(3)
    flat = [healthy_eval_sequence(rng, flat=True) for _ in range(300)]
    assert [f for seq in flat if (f := fired(seq))] == []


def test_fires_once_per_metric_and_again_only_after_it_recovered():
    rising = [0.2 + 0.1 * i for i in range(12)]
    values = [0.5, 0.6, 0.7, 0.55, 0.5, 0.48, 0.52, 0.8, 0.85, 0.9, 0.75, 0.6]
    evals = [an_eval(0, None, 0.3)] + [an_eval(10 * (i + 1), r, v) for i, (r, v) in enumerate(zip(rising, values))]
    steps = [step for step, _ in fired(evals)]
    # fires at the fall to 0.55 (step 40); 0.5, 0.48 and 0.52 are the same fall (0.52 is not back above 0.55 by
    # divergence_metric_drop); 0.8 re-arms it; the new fall to 0.75 fires
    assert steps == [40, 110], steps


def test_thresholds_from_health_change_behaviour():
    evals = fixture_evals(50)
    assert fired(evals, Thresholds(divergence_reward_rise=0.5)) == []  # the reward must rise 0.5: it does not
    assert fired(evals, Thresholds(divergence_metric_drop=0.25))[0][0] == 40  # a 0.2 fall no longer counts
    assert fired(evals, Thresholds(divergence_noise=10.0))[0][0] == 40  # nor one within 10 standard errors
    assert fired(evals, Thresholds(divergence_evals=4))[0][0] == 40  # four evals are needed first
    config = RunConfig(**VALID, health={"divergence_evals": 4, "divergence_reward_rise": 0.2, "divergence_noise": 2})
    assert config.problems() == [] and Thresholds.from_mapping(config.health).divergence_evals == 4


def test_evals_close_together_need_a_smaller_rise_or_a_longer_window():
    evals = fixture_evals(200)  # 21 evals: the reward rises 0.035 between two, the metric falls 0.05
    falling = [e.step for e in evals if e.step > 80]
    found = fired(evals, Thresholds(divergence_reward_rise=0.05, divergence_noise=2.5))
    assert found[0][0] in falling[:2], found


def test_stop_on_accepts_the_rule_and_replay_judges_evals():
    assert "reward_task_divergence" in STOPPABLE_RULES
    RunConfig(**VALID, stop_on="reward_task_divergence").validate()
    assert RunConfig(**VALID, stop_on="reward_task_divergance").problems()  # a misspelling is refused
    assert [w.step for w in replay(fixture_evals(50))] == [30, 40]


def test_a_resumed_run_that_evaluates_a_step_again_is_judged_on_the_new_evals():
    evals = fixture_evals(50)
    monitor = HealthMonitor()
    for event in evals[:3]:  # 0, 10, 20
        monitor.feed_eval(event)
    assert monitor.feed_eval(evals[2]) == []  # step 20 again: it replaces the first, no duplicate window
    assert [w.step for w in monitor.feed_eval(evals[3])] == [30]
