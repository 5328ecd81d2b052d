"""Training health: rules that turn the metrics stream into warnings with advice.

Stdlib only: the trainer runs these rules as it logs (so every viewer, now or next week, reads the same
``warning`` events) and the app can replay them over a recorded stream. Each rule looks at a window of
steps and fires once when its condition holds long enough (a one-step spike never fires); it re-arms only
after the condition has been clear for a window, so a noisy metric does not flap. KL re-arms only once it has
fallen well below its threshold (``kl_rearm``): a KL hovering around ``kl_high`` is one warning, not ten.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from dataclasses import dataclass
from statistics import mean
from typing import Any

from .events import HealthWarning, Metrics
from .severity import Severity

METRIC_RULES = (
    "mode_collapse", "kl_explosion", "entropy_collapse", "no_learning_signal", "reward_plateau", "non_finite",
    "truncation",
)
CONFIG_RULES = ("kl_not_measured", "small_groups", "disk_estimate")
WATCHER_RULES = ("stall", "disk_space", "crash_oom", "crash_nan_probabilities", "crash_nccl_timeout",
                 "crash_disk_full", "crash_disk_error", "crash_environment", "crash_killed", "crash")
RULES = METRIC_RULES + CONFIG_RULES + WATCHER_RULES
STOPPABLE_RULES = METRIC_RULES

ADVICE = {
    "mode_collapse": "Raise --rl-num-generations, raise --rl-temperature, or add a diversity term to the reward.",
    "kl_explosion": "Lower --lr, or raise --rl-kl-coef to hold the policy closer to the reference model.",
    "entropy_collapse": "Lower --lr, raise --rl-temperature, or raise --rl-kl-coef; a collapsed policy stops exploring.",
    "no_learning_signal": "Check the reward function: GRPO learns only from groups whose rewards differ. Give partial "
                          "credit, make tasks easier (or harder if everything succeeds), or raise --rl-num-generations.",
    "reward_plateau": "Check the reward function, try a higher --lr, and check that the model can succeed at all "
                      "(if it never does, start with SFT).",
    "non_finite": "Lower --lr, check for bf16/fp16 overflow (try --mixed-precision no), and check the reward function "
                  "for NaN; resume from the last good checkpoint.",
    "truncation": "Raise --rl-max-new-tokens, or pass --rl-mask-truncated-completions so cut-off completions do not "
                  "teach the model.",
    "kl_not_measured": "Set --rl-kl-coef above 0 (0.01-0.1) to measure and limit how far the policy drifts.",
    "small_groups": "Use --rl-num-generations 8 or more for steadier advantages, if memory allows.",
    "disk_estimate": "Free space on that filesystem, point --runs-dir at a larger one, keep fewer checkpoints "
                     "(--save-total-limit 2) or save less often (--save-steps); --peft checkpoints are far smaller.",
    "disk_space": "Free space on that filesystem now (or move older runs elsewhere), or lower --save-total-limit on the "
                  "next run: the run fails at the first write that does not fit. A failed run resumes from its last "
                  "complete checkpoint (grpo-tui train --resume RUN) once there is room.",
    "crash_disk_full": "Free space on the runs folder's filesystem (or point --runs-dir elsewhere for new runs), keep "
                       "fewer checkpoints (--save-total-limit) or save less often, then resume: grpo-tui train --resume "
                       "RUN continues from the last complete checkpoint.",
    "crash_disk_error": "The filesystem refused a write (read-only, or an I/O error): check `dmesg` and the mount, "
                        "then resume from the last complete checkpoint on a healthy disk.",
}
SWITCHES = ("disk_check",)  # thresholds that are on/off: 0 is allowed (every other one must be positive)


@dataclass
class Thresholds:
    """Rule thresholds; every one can be set with ``--health KEY=VALUE``."""

    window: int = 5
    reward_std_low: float = 0.1
    zero_std_frac: float = 0.9
    entropy_falling: float = 0.8
    entropy_collapse: float = 0.5
    kl_high: float = 0.5
    kl_critical: float = 2.0
    kl_growth: float = 4.0
    kl_rearm: float = 0.25
    no_signal_steps: int = 3
    plateau_window: int = 60
    plateau_min_gain: float = 0.02
    truncation_ratio: float = 0.5
    stall_factor: float = 10.0
    stall_min_seconds: float = 60.0
    disk_check: int = 1  # 0: a run the disk cannot hold starts anyway, with a critical warning
    disk_margin: float = 1.2  # warn before launch when free space is below this x the estimated need
    disk_warn_percent: float = 90.0
    disk_critical_percent: float = 97.0

    @classmethod
    def from_mapping(cls, values: dict | None) -> Thresholds:
        return cls(**(values or {}))


def finite(value: Any) -> bool:
    """A real number: not a bool, not NaN or infinite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def config_warnings(rl_kl_coef: float, num_generations: int) -> list[HealthWarning]:
    """Warnings a config earns before the first step."""
    out = []
    if rl_kl_coef == 0:
        out.append(HealthWarning("kl_not_measured", Severity.INFO, 0, "rl_kl_coef is 0: KL to the reference model is not "
                                 "measured or penalised, so a drifting policy will not show in the KL chart.",
                                 evidence={"rl_kl_coef": 0}))
    if num_generations < 4:
        out.append(HealthWarning("small_groups", Severity.INFO, 0, f"rl_num_generations is {num_generations}: advantages "
                                 "from groups this small are noisy.", evidence={"rl_num_generations": num_generations}))
    return [with_advice(w) for w in out]


def with_advice(warning: HealthWarning) -> HealthWarning:
    """The warning with its rule's standard advice, unless it carries its own."""
    if warning.advice:
        return warning
    return dataclasses.replace(warning, advice=ADVICE.get(warning.rule, ""))


class _Rule:
    """Fire-once bookkeeping: a rule re-arms after ``rearm`` clear steps; a higher severity fires again."""

    def __init__(self, rearm: int):
        self.rearm = rearm
        self.fired: str | None = None
        self.clear_steps = 0

    def update(self, severity: str | None, clear: bool = True) -> bool:
        """``clear`` False: the condition does not hold, but the metric is not back to normal either."""
        if severity is None:
            if self.fired:
                self.clear_steps = self.clear_steps + 1 if clear else 0
                if self.clear_steps >= self.rearm:
                    self.fired = None
            return False
        self.clear_steps = 0
        if self.fired and Severity(severity).rank <= Severity(self.fired).rank:
            return False
        self.fired = severity
        return True


class HealthMonitor:
    """Feed it each logged step's metrics; it returns the warnings that fire at that step."""

    def __init__(self, thresholds: Thresholds | None = None):
        self.t = thresholds or Thresholds()
        size = max(self.t.plateau_window, self.t.window, 8)
        self.history: deque[tuple[int, dict]] = deque(maxlen=size)
        self.entropy_baseline: float | None = None
        self._early_entropy: list[float] = []
        self.rules = {name: _Rule(rearm=self.t.window) for name in METRIC_RULES}
        self.rules["non_finite"] = _Rule(rearm=1)
        self.rules["reward_plateau"] = _Rule(rearm=self.t.plateau_window)

    def feed(self, step: int, metrics: dict) -> list[HealthWarning]:
        self.history.append((step, metrics))
        entropy = metrics.get("entropy")
        if finite(entropy) and len(self._early_entropy) < 3:
            self._early_entropy.append(entropy)
            self.entropy_baseline = max(self._early_entropy)
        fired = []
        for name in METRIC_RULES:
            found = getattr(self, "_" + name)(step, metrics)
            severity = found.severity if found else None
            if self.rules[name].update(severity, clear=self._back_to_normal(name, metrics)):
                fired.append(with_advice(found))
        return fired

    def _back_to_normal(self, rule: str, m: dict) -> bool:
        if rule == "kl_explosion":
            return not finite(m.get("kl")) or m["kl"] < self.t.kl_rearm
        return True

    def _recent(self, key: str, n: int) -> list:
        values = [m.get(key) for _, m in list(self.history)[-n:]]
        return values if len(values) == n else []

    def _non_finite(self, step, m):
        bad = {k: m[k] for k in ("loss", "grad_norm", "reward") if k in m and not finite(m[k])}
        if not bad:
            return None
        shown = ", ".join(f"{k}={'None' if v is None else v}" for k, v in bad.items())
        return HealthWarning("non_finite", Severity.CRITICAL, step, f"Non-finite values at step {step}: {shown}. "
                             "The update that produced them may have damaged the weights.",
                             evidence={k: None if v is None else str(v) for k, v in bad.items()})

    def _kl_explosion(self, step, m):
        t = self.t
        kls = [m.get("kl") for _, m in list(self.history)[-3:]]
        if len(kls) < 2 or not all(finite(v) for v in kls):
            return None
        above = [v for v in kls if v > t.kl_high]
        evidence = {"kl_last_steps": kls, "threshold": t.kl_high}
        if len(above) >= 2 and kls[-1] > t.kl_high:
            severity = Severity.CRITICAL if kls[-1] > t.kl_critical else Severity.WARN
            return HealthWarning("kl_explosion", severity, step, f"KL to the reference model is {kls[-1]:.3g} "
                                 f"(above {t.kl_high} in {len(above)} of the last 3 steps): the policy is drifting fast.",
                                 evidence=evidence)
        older = self._recent("kl", 4)
        if older and all(finite(v) for v in older) and kls[-1] > t.kl_high / 2 and older[0] > 0 \
                and kls[-1] >= t.kl_growth * older[0] and kls[0] < kls[1] < kls[2]:
            return HealthWarning("kl_explosion", Severity.WARN, step, f"KL grew from {older[0]:.3g} to {kls[-1]:.3g} in 3 "
                                 "steps and is still rising.", evidence={**evidence, "kl_3_steps_ago": older[0]})
        return None

    def _entropy_low(self, n: int, factor: float) -> list | None:
        values = self._recent("entropy", n)
        if not values or not self.entropy_baseline or not all(finite(v) for v in values):
            return None
        return values if all(v < factor * self.entropy_baseline for v in values) else None

    def _entropy_collapse(self, step, m):
        values = self._entropy_low(self.t.window, self.t.entropy_collapse)
        if values is None:
            return None
        severity = Severity.CRITICAL if values[-1] < self.t.entropy_collapse / 2 * self.entropy_baseline else Severity.WARN
        return HealthWarning("entropy_collapse", severity, step, f"Entropy fell from {self.entropy_baseline:.3g} to "
                             f"{values[-1]:.3g}: the policy now samples almost the same tokens every time.",
                             evidence={"entropy_start": self.entropy_baseline, "entropy_last_steps": values})

    def _mode_collapse(self, step, m):
        t = self.t
        stds = self._recent("reward_std", t.window)
        zero = self._recent("frac_reward_zero_std", t.window)
        low_std = stds and all(finite(v) and v < t.reward_std_low for v in stds)
        same_groups = zero and all(finite(v) and v >= t.zero_std_frac for v in zero)
        entropy = self._entropy_low(t.window, t.entropy_falling)
        if not (low_std or same_groups) or entropy is None:
            return None
        return HealthWarning("mode_collapse", Severity.CRITICAL if same_groups and low_std else Severity.WARN, step,
                             f"Completions have become alike: reward_std {stds[-1]:.3g} and entropy {entropy[-1]:.3g} "
                             f"(from {self.entropy_baseline:.3g}) over the last {t.window} steps. GRPO gets no signal "
                             "from groups whose completions score the same.",
                             evidence={"reward_std": stds, "frac_reward_zero_std": zero, "entropy": entropy})

    def _no_learning_signal(self, step, m):
        n = self.t.no_signal_steps
        zero = self._recent("frac_reward_zero_std", n)
        stds = self._recent("reward_std", n)
        if zero and all(finite(v) for v in zero):
            flat = all(v >= 0.99 for v in zero)
        else:
            flat = bool(stds) and all(finite(v) and v == 0 for v in stds)
        if not flat or self._entropy_low(n, self.t.entropy_falling) is not None:
            return None
        reward = m.get("reward")
        kind = "every group scores the same"
        if finite(reward) and reward >= 0.99:
            kind = "rewards are saturated: every completion already scores the maximum"
        elif finite(reward) and reward <= 0.01:
            kind = "nothing succeeds: every completion scores 0"
        return HealthWarning("no_learning_signal", Severity.WARN, step, f"No learning signal for {n} steps: {kind} "
                             f"(reward {reward}), so every advantage is zero.",
                             evidence={"frac_reward_zero_std": zero, "reward_std": stds, "reward": reward})

    def _reward_plateau(self, step, m):
        n = self.t.plateau_window
        rewards = self._recent("reward", n)
        if not rewards or not all(finite(v) for v in rewards):
            return None
        first, second = mean(rewards[: n // 2]), mean(rewards[n // 2:])
        if second - first >= self.t.plateau_min_gain or max(rewards) >= 0.99:
            return None
        return HealthWarning("reward_plateau", Severity.INFO, step, f"Reward has not improved over the last {n} steps "
                             f"({first:.3g} then {second:.3g}).", evidence={"first_half_mean": first, "second_half_mean": second})

    def _truncation(self, step, m):
        values = self._recent("completions/clipped_ratio", self.t.window)
        if not values or not all(finite(v) and v >= self.t.truncation_ratio for v in values):
            return None
        return HealthWarning("truncation", Severity.WARN, step, f"{values[-1]:.0%} of completions hit rl_max_new_tokens "
                             f"over the last {self.t.window} steps; they are cut off before they finish.",
                             evidence={"clipped_ratio": values})


def replay(metrics_events: list[Metrics], thresholds: Thresholds | None = None) -> list[HealthWarning]:
    """Every warning the rules give over a recorded stream of ``metrics`` events."""
    monitor = HealthMonitor(thresholds)
    out = []
    for event in metrics_events:
        out += monitor.feed(event.step, event.values)
    return out


def threshold_names() -> list[str]:
    return [f.name for f in dataclasses.fields(Thresholds)]
