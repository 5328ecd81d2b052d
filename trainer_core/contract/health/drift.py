"""Rules for drift and instability that do not need KL, so they still watch at TRL's default ``beta 0``.

- ``grad_norm_spike`` and ``loss_spike``: a step far outside a robust running baseline (the median and
  MAD of the previous ``spike_history`` steps), judged only once ``spike_min_history`` steps exist, so the
  warm-up is never a spike. A grad_norm spike must also be ``spike_factor`` x the median; a loss spike
  (GRPO's loss swings around 0) ``spike_factor`` x the largest earlier swing, and ``loss_spike_floor`` at
  least (a loss that is 0 up to float noise has swings of 1e-8). With KL measured, the loss is judged
  without its KL term (``loss - beta * kl``): a KL jump is kl_explosion's to judge, over its own window.
- ``clip_ratio_high``: ``clip_ratio/region_mean`` held high: the policy moves past the clip range within
  one batch (only possible with ``num_iterations`` > 1), so the updates are too large.
- ``sampling_mismatch``: with vLLM, ``sampling/importance_sampling_ratio/mean`` far from 1 or
  ``sampling/sampling_logp_difference/mean`` large, held for a window: the generator and the trainer
  disagree about the policy they both hold.
"""

from __future__ import annotations

from statistics import fmean

from trainer_core.contract.health.core import RunFacts, Thresholds, Window, robust_spread
from trainer_core.contract.run.events import HealthWarning, warning
from trainer_core.contract.run.json_values import is_number
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

POLICY_LOSS = "loss_without_kl"  # loss - beta * kl: what is left of the loss when KL has its own rule
CLIP_REGION = "clip_ratio/region_mean"
IS_RATIO = "sampling/importance_sampling_ratio/mean"
LOGP_DIFFERENCE = "sampling/sampling_logp_difference/mean"


def _spike(w: Window, t: Thresholds, key: str, m: dict) -> tuple[float, float, float] | None:
    """(value, median, threshold) when this step's ``key`` is a spike against the steps before it."""
    value = m.get(key)
    history = w.before_last(key, t.spike_history)
    if not is_number(value) or len(history) < t.spike_min_history:
        return None
    mid, spread, swing = robust_spread(history)
    if key == "grad_norm":
        limit = max(mid + t.spike_mad * spread, t.spike_factor * mid)
        return (value, mid, limit) if value > limit else None
    limit = max(t.spike_mad * spread, t.spike_factor * swing, t.loss_spike_floor)
    return (value, mid, mid + limit) if abs(value - mid) > limit else None


def grad_norm_spike(w: Window, t: Thresholds, facts: RunFacts, step: int, m: dict) -> HealthWarning | None:
    found = _spike(w, t, "grad_norm", m)
    if found is None:
        return None
    value, mid, limit = found
    severity = Severity.CRITICAL if value > 10 * max(limit, 1e-12) else Severity.WARN
    return warning(
        HealthRule.GRAD_NORM_SPIKE,
        severity,
        step,
        f"grad_norm jumped to {value:.3g} at step {step} (median {mid:.3g} over the last {t.spike_history} "
        f"steps, spike limit {limit:.3g}): one update pushed the weights far harder than the others.",
        {"grad_norm": value, "median": mid, "limit": limit},
    )


def loss_spike(w: Window, t: Thresholds, facts: RunFacts, step: int, m: dict) -> HealthWarning | None:
    key = POLICY_LOSS if POLICY_LOSS in m else "loss"
    found = _spike(w, t, key, m)
    if found is None:
        return None
    value, mid, limit = found
    what = "The loss without its KL term (loss - beta x KL)" if key == POLICY_LOSS else "The loss"
    return warning(
        HealthRule.LOSS_SPIKE,
        Severity.WARN,
        step,
        f"{what} jumped to {value:.3g} at step {step} (median {mid:.3g} over the last {t.spike_history} "
        f"steps; the largest earlier swing reaches {limit:.3g}): the policy ratio or the advantages blew up.",
        {key: value, "median": mid, "limit": limit},
    )


def clip_ratio_high(w: Window, t: Thresholds, facts: RunFacts, step: int, m: dict) -> HealthWarning | None:
    values = w.recent_finite(CLIP_REGION, t.window)
    if values is None or min(values) < t.clip_ratio_high:
        return None
    return warning(
        HealthRule.CLIP_RATIO_HIGH,
        Severity.WARN,
        step,
        f"{fmean(values):.0%} of tokens had their policy ratio clipped over the last {t.window} steps "
        f"(above {t.clip_ratio_high:.0%}): each batch moves the policy past the clip range.",
        {"clip_ratio/region_mean": values, "threshold": t.clip_ratio_high},
    )


def sampling_mismatch(w: Window, t: Thresholds, facts: RunFacts, step: int, m: dict) -> HealthWarning | None:
    ratios = w.recent_finite(IS_RATIO, t.window)
    diffs = w.recent_finite(LOGP_DIFFERENCE, t.window)
    low, high = 1 / (1 + t.is_ratio_band), 1 + t.is_ratio_band
    if ratios is not None and all(not low <= v <= high for v in ratios):
        what = f"the importance-sampling ratio is {ratios[-1]:.3g} (outside {low:.2f}-{high:.2f})"
    elif diffs is not None and min(diffs) >= t.logp_difference_high:
        what = f"token log-probabilities differ by {diffs[-1]:.3g} on average (above {t.logp_difference_high})"
    else:
        return None
    return warning(
        HealthRule.SAMPLING_MISMATCH,
        Severity.WARN,
        step,
        f"vLLM and the trainer disagree for {t.window} steps: {what}. The completions are sampled from a "
        "policy that is not the one being trained.",
        {IS_RATIO: ratios, LOGP_DIFFERENCE: diffs},
    )
