"""The reward-hacking, degenerate-output and drift rules on recorded metric sequences: each fires on its
pattern within a few steps of the onset, and each stays quiet on a near miss."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from trainer_core.contract.health.monitor import HealthMonitor, RunFacts, Thresholds, config_warnings
from trainer_core.contract.health.sample_stats import SampleStats, correlation, near_duplicates, repetition
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

from .test_health_rules import HEALTHY, stream


def fired(events, facts=None, **thresholds) -> list[tuple[str, str, int]]:
    monitor = HealthMonitor(Thresholds(**thresholds), facts)
    out = []
    for event in events:
        out += [(str(w.rule), str(w.severity), w.step) for w in monitor.feed(event.step, event.values)]
    return out


def first(found, rule: HealthRule) -> int | None:
    return next((step for name, _, step in found if name == rule.value), None)


def ramp(start: float, end: float, onset: int, span: int):
    """Flat at ``start`` until ``onset`` (0-based), then a straight climb to ``end`` over ``span`` steps."""
    return lambda i: start if i < onset else min(end, start + (end - start) * (i - onset + 1) / span)


# ---- one reward function carries the run -------------------------------------------------------------------


def test_one_function_rising_while_another_stays_at_zero_is_flagged_soon_after_the_onset():
    onset = 15
    format_reward = ramp(0.1, 0.95, onset, 5)
    events = stream(40, **HEALTHY, rewards__format__mean=format_reward, rewards__accuracy__mean=0.0)
    step = first(fired(events), HealthRule.ONE_REWARD_CARRIES)
    assert step is not None and onset < step <= onset + 5


def test_two_functions_rising_together_are_not_flagged():
    events = stream(
        60, **HEALTHY, rewards__format__mean=ramp(0.1, 0.9, 10, 20), rewards__accuracy__mean=ramp(0.0, 0.5, 12, 20)
    )
    assert first(fired(events), HealthRule.ONE_REWARD_CARRIES) is None


def test_a_function_that_carries_a_share_but_never_rose_is_not_flagged():
    events = stream(40, **HEALTHY, rewards__format__mean=0.9, rewards__accuracy__mean=0.0)
    assert first(fired(events), HealthRule.ONE_REWARD_CARRIES) is None


# ---- length exploitation ---------------------------------------------------------------------------------------


def test_length_pressing_on_the_limit_while_the_reward_rises_is_flagged():
    onset = 12
    events = stream(
        40,
        **{**HEALTHY, "reward": ramp(0.2, 0.7, onset, 6)},
        completions__mean_length=ramp(40, 120, onset, 6),
    )
    facts = RunFacts(max_completion_length=128)
    pressing = next(e.step for e in events if e.values["completions/mean_length"] >= 0.8 * 128)
    step = first(fired(events, facts), HealthRule.LENGTH_EXPLOITATION)
    assert step is not None and pressing <= step <= pressing + 3


def test_length_tracking_the_reward_within_steps_is_flagged_even_before_it_grows():
    events = stream(
        30,
        **{**HEALTHY, "reward": ramp(0.2, 0.5, 8, 5)},
        completions__mean_length=110,
        samples__length_reward_corr=0.9,
    )
    assert first(fired(events, RunFacts(max_completion_length=128)), HealthRule.LENGTH_EXPLOITATION) is not None
    # the same run without a length-reward link and with a steady length is not
    steady = stream(
        30, **{**HEALTHY, "reward": ramp(0.2, 0.5, 8, 5)}, completions__mean_length=110, samples__length_reward_corr=0.1
    )
    assert first(fired(steady, RunFacts(max_completion_length=128)), HealthRule.LENGTH_EXPLOITATION) is None


def test_long_completions_with_a_flat_reward_are_truncation_not_exploitation():
    events = stream(40, **{**HEALTHY, "reward": 0.3}, completions__mean_length=ramp(40, 125, 5, 10))
    assert first(fired(events, RunFacts(max_completion_length=128)), HealthRule.LENGTH_EXPLOITATION) is None


def test_completions_shrinking_to_nothing_while_the_reward_rises_are_flagged():
    events = stream(40, **{**HEALTHY, "reward": ramp(0.2, 0.8, 10, 8)}, completions__mean_length=ramp(60, 1.5, 10, 8))
    assert first(fired(events), HealthRule.LENGTH_EXPLOITATION) is not None


# ---- degenerate completions ------------------------------------------------------------------------------------


def test_repetition_rising_with_the_reward_is_flagged_and_the_same_repetition_without_reward_is_not():
    onset = 10
    rising = stream(
        40, **{**HEALTHY, "reward": ramp(0.2, 0.9, onset, 5)}, samples__repetition=ramp(0.02, 0.9, onset, 5)
    )
    step = first(fired(rising), HealthRule.DEGENERATE_COMPLETIONS)
    assert step is not None and onset < step <= onset + 7
    flat_reward = stream(40, **{**HEALTHY, "reward": 0.3}, samples__repetition=ramp(0.02, 0.9, onset, 5))
    assert first(fired(flat_reward), HealthRule.DEGENERATE_COMPLETIONS) is None


def test_near_copies_inside_groups_rising_with_the_reward_are_flagged():
    events = stream(40, **{**HEALTHY, "reward": ramp(0.2, 0.9, 10, 5)}, samples__near_duplicates=ramp(0.0, 1.0, 10, 5))
    assert first(fired(events), HealthRule.DEGENERATE_COMPLETIONS) is not None


def test_the_sample_statistics():
    assert repetition("the the the the the") == pytest.approx(0.75)
    assert repetition("the cat sat on the mat") == 0.0
    assert repetition("a" * 30) == pytest.approx(1 - 1 / 27)
    assert repetition("ok") is None
    assert near_duplicates(["a b c", "a b c", "x y z", "a b c"]) == pytest.approx(2 / 3)
    assert near_duplicates(["one two", "three four"]) == 0.0
    assert correlation([1, 2, 3, 4], [2, 4, 6, 8]) == pytest.approx(1.0)
    assert correlation([1, 1, 1], [1, 2, 3]) is None
    stats = SampleStats()
    stats.add(
        [
            {"prompt": "p", "completion": "go go go go", "reward": 1.0},
            {"prompt": "p", "completion": "go go go go", "reward": 1.0},
            {"prompt": "q", "completion": "short", "reward": 0.0},
            {"prompt": "q", "completion": "another quite different answer now", "reward": 0.5},
        ]
    )
    out = stats.pop()
    assert out["samples/repetition"] == pytest.approx((2 / 3 + 2 / 3 + 0) / 3)  # "short" is too short to judge
    assert out["samples/near_duplicates"] == pytest.approx(0.5)  # the first group copies, the second does not
    assert out["samples/length_reward_corr"] == pytest.approx(correlation([4, 4, 1, 5], [1.0, 1.0, 0.0, 0.5]))
    assert stats.pop() == {}  # each logged step starts again


def test_repetition_is_the_repeated_share_of_word_pairs_or_of_a_long_runs_4_grams():
    def by_definition(text: str) -> float | None:
        words = text.split()
        joined = "".join(words)
        if len(words) >= 3:
            items = [(words[i], words[i + 1]) for i in range(len(words) - 1)]
        elif len(joined) >= 16:
            items = [joined[i : i + 4] for i in range(len(joined) - 3)]
        else:
            return None
        return 1.0 - len(set(items)) / len(items)

    pick = random.Random(3)
    texts = ["abcd" * 5, "abcabcabcabcabcabc", "x" * 16, "y" * 15, "\ufffd\ufffdab\ufffd" * 4 + " tail"]
    texts += ["".join(pick.choice("ab c\ufffd\n") for _ in range(pick.randrange(0, 60))) for _ in range(300)]
    texts += ["".join(pick.choice("abc\ufffd") for _ in range(pick.randrange(10, 60))) for _ in range(300)]
    for text in texts:
        assert repetition(text) == by_definition(text), text


# ---- drift without KL ------------------------------------------------------------------------------------------


def noisy(base: float, spread: float, seed: int = 0):
    rng = random.Random(seed)
    values = [base + rng.uniform(-spread, spread) for _ in range(200)]
    return lambda i: values[i]


def test_a_grad_norm_spike_is_flagged_at_its_step_and_noise_and_warm_up_are_not():
    norms = noisy(1.0, 0.3)
    spiked = lambda i: 40.0 if i == 30 else norms(i)  # noqa: E731
    found = fired(stream(60, **{**HEALTHY, "grad_norm": spiked}))
    assert (HealthRule.GRAD_NORM_SPIKE.value, "critical", 31) in found
    # a warm-up that starts high and falls is not a spike; neither is steady noise
    warm = lambda i: 50.0 / (1 + i) + norms(i)  # noqa: E731
    assert first(fired(stream(60, **{**HEALTHY, "grad_norm": warm})), HealthRule.GRAD_NORM_SPIKE) is None
    assert first(fired(stream(150, **{**HEALTHY, "grad_norm": norms})), HealthRule.GRAD_NORM_SPIKE) is None


def test_a_moderate_grad_norm_jump_is_a_warning_not_critical():
    norms = noisy(1.0, 0.1)
    found = fired(stream(40, **{**HEALTHY, "grad_norm": lambda i: 5.0 if i == 25 else norms(i)}))
    assert (HealthRule.GRAD_NORM_SPIKE.value, "warn", 26) in found


def test_a_loss_spike_around_zero_is_flagged_and_ordinary_swings_are_not():
    losses = noisy(0.0, 0.05, seed=3)
    found = fired(stream(60, **{**HEALTHY, "loss": lambda i: 5e8 if i == 35 else losses(i)}))
    assert first(found, HealthRule.LOSS_SPIKE) == 36
    assert first(fired(stream(150, **{**HEALTHY, "loss": losses})), HealthRule.LOSS_SPIKE) is None


def test_with_kl_measured_a_one_step_kl_jump_is_no_loss_spike_and_a_policy_loss_jump_is():
    """Seen on the healthy demo (beta 0.2): KL 0.15 jumped to 0.99 for one step, the loss with it."""
    kls = noisy(0.15, 0.05, seed=7)
    kl = lambda i: 0.99 if i == 40 else kls(i)  # noqa: E731
    policy = noisy(0.0, 0.004, seed=8)
    facts = RunFacts(kl_measured=True, kl_coef=0.2)
    calm = stream(60, **{**HEALTHY, "kl": kl, "loss": lambda i: policy(i) + 0.2 * kl(i)})
    assert first(fired(calm), HealthRule.LOSS_SPIKE) == 41  # without the facts, the raw loss is judged
    assert first(fired(calm, facts), HealthRule.LOSS_SPIKE) is None
    blown = stream(60, **{**HEALTHY, "kl": kls, "loss": lambda i: (5.0 if i == 40 else policy(i)) + 0.2 * kls(i)})
    assert first(fired(blown, facts), HealthRule.LOSS_SPIKE) == 41


def test_a_loss_that_is_zero_up_to_float_noise_never_spikes():
    """GRPO with one iteration per batch logs a loss of 0 give or take 1e-8 (seen on an agentic run)."""
    noise = noisy(0.0, 1e-9, seed=5)
    found = fired(stream(60, **{**HEALTHY, "loss": lambda i: -3e-8 if i == 30 else noise(i)}))
    assert first(found, HealthRule.LOSS_SPIKE) is None


def test_clip_ratio_held_high_is_flagged_and_a_single_high_step_is_not():
    held = stream(20, **HEALTHY, clip_ratio__region_mean=ramp(0.0, 0.4, 8, 1))
    assert first(fired(held), HealthRule.CLIP_RATIO_HIGH) == 13  # high from step 9, for a window of 5
    once = stream(20, **HEALTHY, clip_ratio__region_mean=lambda i: 0.5 if i == 8 else 0.01)
    assert first(fired(once), HealthRule.CLIP_RATIO_HIGH) is None


@pytest.mark.parametrize(
    "series",
    [
        {"sampling__importance_sampling_ratio__mean": 0.5},
        {"sampling__importance_sampling_ratio__mean": 1.0, "sampling__sampling_logp_difference__mean": 0.8},
    ],
)
def test_vllm_and_the_trainer_disagreeing_is_flagged(series):
    facts = RunFacts(use_vllm=True)
    assert first(fired(stream(10, **HEALTHY, **series), facts), HealthRule.SAMPLING_MISMATCH) == 5
    agree = {"sampling__importance_sampling_ratio__mean": 1.02, "sampling__sampling_logp_difference__mean": 0.02}
    assert first(fired(stream(10, **HEALTHY, **agree), facts), HealthRule.SAMPLING_MISMATCH) is None


# ---- metrics not logged, and beta 0 ----------------------------------------------------------------------------


def test_a_rule_whose_metric_is_not_logged_says_so_once_and_never_fires():
    facts = RunFacts(max_completion_length=64, reward_funcs=1, use_vllm=True, kl_measured=True)
    events = stream(30, reward=lambda i: 0.2 + 0.01 * i, reward_std=0.3, loss=0.0, grad_norm=1.0)
    monitor = HealthMonitor(Thresholds(), facts)
    said = [w for e in events for w in monitor.feed(e.step, e.values)]
    assert all(w.severity is Severity.INFO for w in said)
    named = {str(w.rule): w for w in said}
    assert set(named) == {
        "mode_collapse",
        "kl_explosion",
        "entropy_collapse",
        "truncation",
        "length_exploitation",
        "degenerate_completions",
        "clip_ratio_high",
        "sampling_mismatch",
    }
    assert named["sampling_mismatch"].evidence["metric_not_logged"] == [
        "sampling/importance_sampling_ratio/mean",
        "sampling/sampling_logp_difference/mean",
    ]
    assert "does not log kl" in named["kl_explosion"].message
    assert all(w.step == 3 for w in said)


def test_rules_that_do_not_apply_to_the_run_say_nothing_about_missing_metrics():
    facts = RunFacts(max_completion_length=64, reward_funcs=1, use_vllm=False, kl_measured=False)
    events = stream(
        10,
        **{k: v for k, v in HEALTHY.items() if k != "kl"},
        completions__mean_length=20,
        samples__repetition=0.0,
        clip_ratio__region_mean=0.0,
    )
    assert fired(events, facts) == []


def test_kl_not_measured_names_the_rules_still_watching_for_drift():
    [info] = [w for w in config_warnings(0.0, 8) if w.rule is HealthRule.KL_NOT_MEASURED]
    assert info.evidence["drift_rules"] == ["grad_norm_spike", "loss_spike", "clip_ratio_high"]
    assert "grad_norm_spike, loss_spike, clip_ratio_high" in info.message
    [with_vllm] = [w for w in config_warnings(0.0, 8, use_vllm=True) if w.rule is HealthRule.KL_NOT_MEASURED]
    assert with_vllm.evidence["drift_rules"][-1] == "sampling_mismatch"
    assert not [w for w in config_warnings(0.05, 8) if w.rule is HealthRule.KL_NOT_MEASURED]


def test_non_finite_values_do_not_count_as_spikes():
    norms = noisy(1.0, 0.2)
    found = fired(stream(40, **{**HEALTHY, "grad_norm": lambda i: math.nan if i == 25 else norms(i)}))
    assert first(found, HealthRule.GRAD_NORM_SPIKE) is None and first(found, HealthRule.NON_FINITE) == 26


# ---- agentic runs --------------------------------------------------------------------------------------------


TOOLS = RunFacts(max_completion_length=64, reward_funcs=1, tools=True, kl_measured=True)


def test_tool_failures_held_high_are_flagged_and_a_bad_step_is_not():
    held = stream(20, **HEALTHY, tools__call_frequency=1.5, tools__failure_frequency=ramp(0.1, 0.8, 8, 1))
    assert first(fired(held, TOOLS), HealthRule.TOOL_FAILURES) == 13
    once = stream(20, **HEALTHY, tools__call_frequency=1.5, tools__failure_frequency=lambda i: 0.9 if i == 8 else 0.1)
    assert first(fired(once, TOOLS), HealthRule.TOOL_FAILURES) is None


def test_a_model_that_stops_calling_its_tools_is_flagged_after_the_start():
    dropped = stream(
        40, **HEALTHY, tools__call_frequency=lambda i: 1.0 if i < 20 else 0.0, tools__failure_frequency=0.0
    )
    found = fired(dropped, TOOLS)
    assert first(found, HealthRule.TOOL_UNUSED) == 25
    monitor = HealthMonitor(Thresholds(), TOOLS)
    said = [w for e in dropped for w in monitor.feed(e.step, e.values) if w.rule is HealthRule.TOOL_UNUSED]
    assert said[0].evidence["used_before"] is True and "learned to answer without them" in said[0].message
    # at the start a model that has not called a tool yet is not judged
    never = stream(10, **HEALTHY, tools__call_frequency=0.0, tools__failure_frequency=0.0)
    assert first(fired(never, TOOLS), HealthRule.TOOL_UNUSED) is None


def test_episodes_cut_at_the_turn_limit_are_flagged():
    events = stream(
        20, **HEALTHY, tools__call_frequency=3.0, tools__failure_frequency=0.0, samples__turn_limit_share=0.8
    )
    assert first(fired(events, TOOLS), HealthRule.TURN_LIMIT) == 5


def test_correlation_in_floats_matches_the_exact_one():
    rng = random.Random(7)
    for n in (3, 8, 64):
        xs = [float(rng.randint(1, 16)) for _ in range(n)]
        ys = [rng.random() for _ in range(n)]
        if len(set(xs)) > 1:
            assert correlation(xs, ys) == pytest.approx(statistics.correlation(xs, ys), abs=1e-12)
    assert correlation([0.1, 0.1, 0.1], [0.3, 0.2, 0.1]) is None  # flat in floats too, not a tiny spread
    assert correlation([1e-300, 2e-300, 3e-300], [1.0, 2.0, 3.0]) in (None, pytest.approx(1.0))
    assert correlation([1.0, 2.0, 3.0], [-2.0, -4.0, -6.0]) == -1.0


def test_a_batch_s_statistics_are_those_of_each_completion_and_group():
    """``add`` splits each completion once and shares the words: what it gives is what the text functions give."""
    rng = random.Random(3)
    vocab = ["a", "b", "go", "é", "字", "\ufffd", "x" * 20]
    samples = []
    for g in range(6):
        base = " ".join(rng.choice(vocab) for _ in range(rng.randrange(0, 8)))
        for _ in range(4):
            text = base if rng.random() < 0.4 else " ".join(rng.choice(vocab) for _ in range(rng.randrange(0, 8)))
            samples.append({"prompt": f"p{g}", "completion": text, "reward": rng.random()})
    stats = SampleStats()
    stats.add(samples)
    texts = [s["completion"] for s in samples]
    groups = [texts[i : i + 4] for i in range(0, len(texts), 4)]
    measured = [r for t in texts if (r := repetition(t)) is not None]
    lengths = [float(len(t.split())) for t in texts]
    assert stats.pop() == {
        "samples/repetition": pytest.approx(statistics.fmean(measured)),
        "samples/near_duplicates": pytest.approx(statistics.fmean(near_duplicates(g) for g in groups)),
        "samples/length_reward_corr": pytest.approx(correlation(lengths, [s["reward"] for s in samples])),
    }
