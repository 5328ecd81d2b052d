"""Every health rule on recorded metric sequences, including one-step spikes that must not fire."""

from __future__ import annotations

import dataclasses
import random

import pytest

import trainer_core.contract.health.drift as drift
import trainer_core.contract.health.hacking as hacking
import trainer_core.contract.health.sample_stats as sample_stats
import trainer_core.contract.health.tools as tools
from grpo_tui.services.catalog.watch_rules import stall_warning
from trainer_core.contract.health.monitor import _READS, HealthMonitor, RunFacts, Thresholds, config_warnings, replay
from trainer_core.contract.run.crash import classify_crash
from trainer_core.contract.run.events import Error, HealthWarning, Metrics, RunFinished, decode
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status


def stream(n, **series) -> list[Metrics]:
    """Metrics events for n steps; each series is a list, a constant, or a function of the step."""
    out = []
    for i in range(n):
        values = {}
        for key, v in series.items():
            values[key.replace("__", "/")] = v(i) if callable(v) else v[i] if isinstance(v, list) else v
        out.append(Metrics(step=i + 1, values=values))
    return out


HEALTHY = dict(
    reward=lambda i: 0.2 + 0.01 * i,
    reward_std=0.3,
    frac_reward_zero_std=0.1,
    kl=0.02,
    entropy=6.0,
    loss=0.01,
    grad_norm=1.0,
    completions__clipped_ratio=0.1,
)


def rules(events, **thresholds):
    return [(w.rule, w.severity, w.step) for w in replay(events, Thresholds(**thresholds))]


def test_a_healthy_run_raises_nothing():
    assert rules(stream(80, **HEALTHY)) == []


def test_kl_explosion_fires_within_three_steps_of_crossing():
    kl = [0.02] * 10 + [0.3, 0.45, 0.6, 0.8, 1.1, 2.5]
    fired = rules(stream(len(kl), **{**HEALTHY, "kl": kl}))
    first = [f for f in fired if f[0] == "kl_explosion"]
    assert first[0][2] - 13 <= 3 and first[0][1] == "warn"
    assert ("kl_explosion", "critical", 16) in fired


def test_a_one_step_kl_spike_does_not_fire():
    kl = [0.02] * 10 + [3.0] + [0.02] * 10
    assert rules(stream(len(kl), **{**HEALTHY, "kl": kl})) == []


def test_kl_growing_fast_fires_before_the_threshold():
    kl = [0.02] * 10 + [0.08, 0.18, 0.45]
    assert rules(stream(len(kl), **{**HEALTHY, "kl": kl}))[0][0] == "kl_explosion"


def test_kl_fires_once_until_it_recovers_then_again():
    kl = [0.9] * 10 + [0.05] * 6 + [0.9] * 3
    fired = [f for f in rules(stream(len(kl), **{**HEALTHY, "kl": kl})) if f[0] == "kl_explosion"]
    assert [f[2] for f in fired] == [2, 18]


def test_kl_hovering_around_the_threshold_is_one_warning():
    kl = [0.9] * 6 + [0.45, 0.55, 0.45, 0.45, 0.4, 0.45, 0.45, 0.45, 0.45, 0.7, 0.8, 0.9, 0.6, 0.45] * 6
    fired = [f for f in rules(stream(len(kl), **{**HEALTHY, "kl": kl})) if f[0] == "kl_explosion"]
    assert [f[2] for f in fired] == [2]
    looser = [f for f in rules(stream(len(kl), **{**HEALTHY, "kl": kl}), kl_rearm=0.5) if f[0] == "kl_explosion"]
    assert len(looser) > 1


def test_mode_collapse_needs_flat_rewards_and_falling_entropy():
    n = 20
    entropy = [6.0] * 5 + [6.0 - 0.4 * i for i in range(1, n - 4)]
    std = [0.3] * 8 + [0.02] * (n - 8)
    fired = rules(stream(n, **{**HEALTHY, "entropy": entropy, "reward_std": std, "frac_reward_zero_std": 0.95}))
    assert "mode_collapse" in [f[0] for f in fired]
    assert "entropy_collapse" in [f[0] for f in fired]
    assert "no_learning_signal" not in [f[0] for f in fired]


def test_constant_rewards_are_no_learning_signal_within_five_steps():
    fired = rules(stream(6, **{**HEALTHY, "reward": 0.5, "reward_std": 0.0, "frac_reward_zero_std": 1.0}))
    assert fired[0][0] == "no_learning_signal" and fired[0][2] <= 5
    saturated = replay(stream(4, **{**HEALTHY, "reward": 1.0, "reward_std": 0.0, "frac_reward_zero_std": 1.0}))
    assert "saturated" in saturated[0].message
    never = replay(stream(4, **{**HEALTHY, "reward": 0.0, "reward_std": 0.0, "frac_reward_zero_std": 1.0}))
    assert "nothing succeeds" in never[0].message


def test_one_flat_step_is_not_no_learning_signal():
    zero = [0.1] * 5 + [1.0] + [0.1] * 5
    assert rules(stream(len(zero), **{**HEALTHY, "frac_reward_zero_std": zero})) == []


def test_entropy_collapse_ignores_a_single_dip():
    entropy = [6.0] * 10 + [1.0] + [6.0] * 10
    assert rules(stream(len(entropy), **{**HEALTHY, "entropy": entropy})) == []


def test_reward_plateau_after_a_long_flat_window():
    fired = rules(stream(70, **{**HEALTHY, "reward": lambda i: 0.3 + (0.01 if i % 2 else -0.01)}), plateau_window=60)
    assert fired == [("reward_plateau", "info", 60)]


@pytest.mark.parametrize("key", ["loss", "grad_norm", "reward"])
@pytest.mark.parametrize("bad", [None, float("nan"), float("inf")])
def test_non_finite_fires_at_once(key, bad):
    events = stream(5, **HEALTHY)
    events[3].values[key] = bad
    warnings = replay(events)
    assert [(w.rule, w.severity, w.step) for w in warnings] == [("non_finite", "critical", 4)]
    assert key in warnings[0].evidence


def test_truncation_sustained_not_single():
    single = [0.1] * 5 + [1.0] + [0.1] * 5
    assert rules(stream(len(single), **{**HEALTHY, "completions__clipped_ratio": single})) == []
    fired = rules(stream(8, **{**HEALTHY, "completions__clipped_ratio": 0.8}))
    assert fired == [("truncation", "warn", 5)]


def test_every_warning_has_message_advice_and_evidence():
    events = stream(6, **{**HEALTHY, "kl": 5.0, "completions__clipped_ratio": 0.9})
    warnings = HealthMonitor().feed(1, events[0].values) + replay(events)
    assert warnings
    for warning in warnings:
        assert isinstance(warning, HealthWarning) and isinstance(warning.severity, Severity)
        record = warning.to_record()
        assert record["type"] == "warning" and record["message"] and record["advice"] and record["evidence"]
        assert decode(dict(record)) == dataclasses.replace(warning, time=record["time"])


def test_thresholds_are_configurable():
    events = stream(6, **{**HEALTHY, "kl": 0.3})
    assert rules(events) == [] and rules(events, kl_high=0.2)[0][0] == "kl_explosion"


def test_config_warnings():
    assert [w.rule for w in config_warnings(0.0, 8)] == ["kl_not_measured"]
    assert [w.rule for w in config_warnings(0.1, 2)] == ["small_groups"]


def test_stall_uses_the_median_step_time():
    times = [100.0 + i for i in range(20)]
    assert stall_warning(times, 20, now=times[-1] + 30, process_alive=True) is None
    fired = stall_warning(times, 20, now=times[-1] + 90, process_alive=True)
    assert fired.rule == "stall" and fired.severity == "warn" and fired.step == 20
    assert stall_warning(times, 20, now=times[-1] + 90, process_alive=False) is None
    assert stall_warning(times, 20, now=times[-1] + 400, process_alive=True).severity == "critical"


@pytest.mark.parametrize(
    "line,rule",
    [
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "crash_oom"),
        ("RuntimeError: probability tensor contains either `inf`, `nan` or element < 0", "crash_nan_probabilities"),
        (
            "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE)",
            "crash_nccl_timeout",
        ),
    ],
)
def test_crash_classification_from_the_log(line, rule):
    finished = RunFinished(status=Status.FAILED, reason="exit code 1", step=3)
    warning = classify_crash(f"step 3\n{line}\nmore\n", [], finished)
    assert warning.rule == rule and warning.severity == "critical" and line[:40] in warning.evidence["log_line"]
    assert warning.step == 3


def test_crash_classification_from_error_events():
    env_error = Error(kind="environment", message="score_episode raised KeyError: 'x'", case={"a": 1}, step=4)
    crash = classify_crash("", [env_error], None)
    assert crash.rule == "crash_environment" and crash.evidence == {"case": {"a": 1}} and crash.step == 4
    killed = Error(kind="trainer_exit", message="the trainer was killed by SIGKILL")
    assert classify_crash("", [killed], None).rule == "crash_killed"
    oom = Error(kind="exception", message="OutOfMemoryError", traceback="torch.OutOfMemoryError: CUDA out of memory.")
    assert classify_crash("", [oom], None).rule == "crash_oom"
    assert classify_crash("all fine", [], None) is None


def test_a_rule_whose_metrics_were_never_logged_cannot_fire_so_the_monitor_skips_it():
    """The monitor skips a rule's check until one of the metrics it reads is logged (``_READS``): with every other
    metric rising, falling, jumping or random, the skipped check itself never finds anything."""
    shapes = [
        lambda i, pick: min(1.0, i / 60),
        lambda i, pick: max(0.0, 1 - i / 60),
        lambda i, pick: 1.0 if i != 50 else 1e6,
        lambda i, pick: 0.01 if i < 40 else 5.0,
        lambda i, pick: pick.choice([0.0, 1.0, 0.999, -50.0, 1e6, 3.0, None, float("nan")]),
    ]
    keys = sorted(
        {*HEALTHY, *sample_stats.KEYS, "rewards/a/mean", "rewards/b/mean"}
        | {hacking.MEAN_LENGTH, hacking.CLIPPED_RATIO, drift.CLIP_REGION, drift.IS_RATIO, drift.LOGP_DIFFERENCE}
        | {tools.CALL_FREQUENCY, tools.FAILURE_FREQUENCY}
    )
    facts = RunFacts(max_completion_length=8, reward_funcs=2, use_vllm=True, kl_measured=True, kl_coef=0.1, tools=True)
    for rule, reads in _READS.items():
        for seed in range(12):
            pick = random.Random(f"{rule}-{seed}")
            shape = {k: shapes[seed] if seed < len(shapes) else pick.choice(shapes) for k in keys if k not in reads}
            monitor = HealthMonitor(Thresholds(), facts)
            for step in range(1, 90):
                values = {k: f(step, pick) for k, f in shape.items()}
                monitor.feed(step, values)
                assert monitor._checks[rule](step, values) is None, (rule, seed, step)


def test_a_metric_first_logged_late_is_judged_from_then_on():
    kl = [None] * 10 + [0.9, 1.2, 2.5, 3.0]
    events = stream(len(kl), **{**HEALTHY, "kl": kl})
    for event in events:
        if event.values["kl"] is None:
            del event.values["kl"]
    assert ("kl_explosion", "critical", 13) in rules(events)


def test_a_rules_entry_condition_on_the_steps_own_values_never_hides_a_warning():
    """The rules whose every window step must pass are skipped where this step's own values fail (``_entries``):
    over streams that fire each of them, the monitor gives exactly the warnings it gives with every check run."""
    shapes = [
        lambda i, pick: min(1.0, i / 60),
        lambda i, pick: max(0.0, 1 - i / 60),
        lambda i, pick: 0.01 if i < 40 else 5.0,
        lambda i, pick: 0.0 if (i // 7) % 2 else 1.0,
        lambda i, pick: {31: 0.05, 32: 0.15, 33: 0.45}.get(i, 0.02),  # KL grown 20 times in 3 steps, below kl_high
        lambda i, pick: pick.choice([0.0, 0.3, 0.99, 1.0, 0.5, None, float("nan")]),
    ]
    keys = [*HEALTHY, "completions/clipped_ratio", drift.CLIP_REGION]
    facts = RunFacts(max_completion_length=8, reward_funcs=1, kl_measured=True, kl_coef=0.1)
    fired = set()
    for seed in range(40):
        pick = random.Random(seed)
        shape = {k: shapes[seed] if seed < len(shapes) else pick.choice(shapes) for k in keys}
        entered, every = HealthMonitor(Thresholds(), facts), HealthMonitor(Thresholds(), facts)
        every._plan = [(rule, check, state, reads, None) for rule, check, state, reads, _ in every._plan]
        for step in range(1, 90):
            values = {k: f(step, pick) for k, f in shape.items()}
            said = [(w.rule, w.severity, w.message) for w in entered.feed(step, dict(values))]
            assert said == [(w.rule, w.severity, w.message) for w in every.feed(step, dict(values))], (seed, step)
            fired.update(rule for rule, _, _ in said)
    guarded = {rule for rule, *_, entry in HealthMonitor(Thresholds(), facts)._plan if entry is not None}
    assert guarded <= fired, guarded - fired  # each guarded rule fired somewhere: the comparison saw it work
