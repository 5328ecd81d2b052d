"""Rules for reward hacking and degenerate output: the model earns reward without doing the task.

Each compares the last ``window`` logged steps with the run's own start (a metric's baseline is the mean
of its first ``baseline_steps`` values), so a task that is hard from the start is not flagged, and each
needs the reward to be rising too: what these rules catch is the reward being *earned* by the wrong thing.

- ``one_reward_carries``: with several reward functions (TRL logs ``rewards/NAME/mean``), one has risen and
  carries most of the total while another stays flat for ``reward_flat_steps``;
- ``length_exploitation``: completions press against ``max_completion_length`` while their length rises
  with the reward (or tracks it within each step: ``samples/length_reward_corr``); or they shrink to a
  few tokens while the reward rises;
- ``degenerate_completions``: repetition (``samples/repetition``) or near-copies inside a group
  (``samples/near_duplicates``, both from health/sample_stats.py) rise with the reward.
"""

from __future__ import annotations

from statistics import fmean

from trainer_core.contract.health.core import RunFacts, Thresholds, Window
from trainer_core.contract.health.sample_stats import LENGTH_REWARD_CORR, NEAR_DUPLICATES, REPETITION
from trainer_core.contract.run.events import HealthWarning, warning
from trainer_core.contract.run.json_values import is_number
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

REWARD_FUNC_PREFIX, REWARD_FUNC_SUFFIX = "rewards/", "/mean"
MEAN_LENGTH = "completions/mean_length"
CLIPPED_RATIO = "completions/clipped_ratio"


def reward_func_keys(metrics: dict) -> list[str]:
    """The per-function reward means TRL logs: ``rewards/NAME/mean``."""
    return [k for k in metrics if k.startswith(REWARD_FUNC_PREFIX) and k.endswith(REWARD_FUNC_SUFFIX)]


def _reward_rose(w: Window, t: Thresholds, key: str = "reward") -> tuple[float, float] | None:
    """(baseline, recent mean) of ``key`` when it rose by ``reward_gain`` over its baseline."""
    base, recent = w.baseline(key), w.recent_finite(key, t.window)
    if base is None or recent is None or fmean(recent) - base < t.reward_gain:
        return None
    return base, fmean(recent)


def one_reward_carries(w: Window, t: Thresholds, facts: RunFacts, step: int, m: dict) -> HealthWarning | None:
    keys = reward_func_keys(m)
    if len(keys) < 2 or w.count < max(t.reward_flat_steps, t.baseline_steps + t.window):
        return None
    recent = {k: w.recent_finite(k, t.window) for k in keys}
    if any(v is None for v in recent.values()):
        return None
    means = {k: fmean(v) for k, v in recent.items() if v is not None}
    total = sum(abs(v) for v in means.values())
    for carrier in keys:
        rose = _reward_rose(w, t, carrier)
        if rose is None or not total or abs(means[carrier]) / total < t.reward_share_high:
            continue
        for flat in keys:
            values = w.recent_finite(flat, t.reward_flat_steps)
            base = w.baseline(flat)
            if flat == carrier or values is None or base is None:
                continue
            if max(values) - min(values) <= t.reward_flat_range and fmean(values) - base < t.reward_gain / 2:
                name, other = _func_name(carrier), _func_name(flat)
                return warning(
                    HealthRule.ONE_REWARD_CARRIES,
                    Severity.WARN,
                    step,
                    f"Reward function {name} rose from {rose[0]:.3g} to {rose[1]:.3g} and now makes "
                    f"{abs(means[carrier]) / total:.0%} of the reward, while {other} has stayed at "
                    f"{fmean(values):.3g} for {t.reward_flat_steps} steps: the model may have learned the format, "
                    "not the task.",
                    {
                        "rising": name,
                        "flat": other,
                        "rising_from": rose[0],
                        "rising_to": rose[1],
                        "share": abs(means[carrier]) / total,
                        "flat_values": values,
                    },
                )
    return None


def _func_name(key: str) -> str:
    return key[len(REWARD_FUNC_PREFIX) : -len(REWARD_FUNC_SUFFIX)]


def length_exploitation(w: Window, t: Thresholds, facts: RunFacts, step: int, m: dict) -> HealthWarning | None:
    lengths = w.recent_finite(MEAN_LENGTH, t.window)
    base = w.baseline(MEAN_LENGTH)
    reward = _reward_rose(w, t)
    if lengths is None or base is None or reward is None or w.count < t.baseline_steps + t.window:
        return None
    length = fmean(lengths)
    evidence = {"mean_length": lengths, "length_start": base, "reward_from": reward[0], "reward_to": reward[1]}
    if length <= max(2.0, t.length_short * base):
        return warning(
            HealthRule.LENGTH_EXPLOITATION,
            Severity.WARN,
            step,
            f"Completions shrank from {base:.3g} to {length:.3g} tokens while the reward rose from "
            f"{reward[0]:.3g} to {reward[1]:.3g}: the reward may pay for saying almost nothing.",
            evidence,
        )
    limit = facts.max_completion_length
    clipped = w.recent_finite(CLIPPED_RATIO, t.window)
    pressing = (limit and length >= t.length_press * limit) or (clipped and fmean(clipped) >= t.truncation_ratio)
    if not pressing:
        return None
    corr = w.recent_finite(LENGTH_REWARD_CORR, t.window)
    tracks = corr is not None and min(corr) >= t.length_reward_corr
    if not (length >= t.length_growth * base or tracks):
        return None
    why = (
        f"longer completions score higher within every step (length-reward correlation {fmean(corr):.2f})"
        if tracks and corr is not None
        else f"their length grew from {base:.3g} tokens with the reward"
    )
    return warning(
        HealthRule.LENGTH_EXPLOITATION,
        Severity.WARN,
        step,
        f"Completions average {length:.3g} tokens, pressing on the limit of {limit or 'max_completion_length'}, "
        f"and {why}; the reward rose from {reward[0]:.3g} to {reward[1]:.3g}: it may pay for length.",
        {**evidence, "max_completion_length": limit, "length_reward_corr": corr},
    )


def degenerate_completions(w: Window, t: Thresholds, facts: RunFacts, step: int, m: dict) -> HealthWarning | None:
    reward = _reward_rose(w, t)
    if reward is None:
        return None
    for key, high, what in (
        (REPETITION, t.repetition_high, "of their word pairs repeat"),
        (NEAR_DUPLICATES, t.near_duplicates_high, "of each group's completions nearly copy another"),
    ):
        values, base = w.recent_finite(key, t.window), w.baseline(key)
        if values is None or base is None or fmean(values) < high or fmean(values) - base < t.repetition_rise:
            continue
        if not all(is_number(v) and v >= high * 0.8 for v in values):
            continue
        return warning(
            HealthRule.DEGENERATE_COMPLETIONS,
            Severity.WARN,
            step,
            f"Completions are degenerating: {fmean(values):.0%} {what} (from {base:.0%} at the start), while the "
            f"reward rose from {reward[0]:.3g} to {reward[1]:.3g}.",
            {"metric": key, "values": values, "start": base, "reward_from": reward[0], "reward_to": reward[1]},
        )
    return None
