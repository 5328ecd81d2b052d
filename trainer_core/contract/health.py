"""Training health: rules that turn the metrics stream into warnings with advice.

Stdlib only: the trainer runs these rules as it logs (so every viewer, now or next week, reads the same
``warning`` events) and the app can replay them over a recorded stream. Each rule looks at a window of
steps and fires once when its condition holds long enough (a one-step spike never fires); it re-arms only
after the condition has been clear for a window, so a noisy metric does not flap. KL re-arms only once it has
fallen well below its threshold (``kl_rearm``): a KL hovering around ``kl_high`` is one warning, not ten.
The rules' names and advice are ``health_rules.HealthRule``; ``warning`` builds every rule's event from them.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from statistics import mean
from typing import Any, TypeGuard, cast

from .events import HealthWarning, Metrics
from .health_rules import HealthRule, RuleGroup, rules_of
from .severity import Severity

METRIC_RULES = rules_of(RuleGroup.METRIC)
CONFIG_RULES = rules_of(RuleGroup.CONFIG, RuleGroup.DATASET, RuleGroup.RESUME)  # written once, at the start
WATCHER_RULES = rules_of(RuleGroup.WATCHER)
RULES = tuple(rule.value for rule in HealthRule)
STOPPABLE_RULES = tuple(rule.value for rule in HealthRule if rule.stoppable)
ADVICE = {rule.value: rule.advice for rule in HealthRule}
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


def finite(value: Any) -> TypeGuard[float]:
    """A real number: not a bool, not NaN or infinite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def warning(
    rule: HealthRule, severity: Severity, step: int, message: str, evidence: dict | None = None
) -> HealthWarning:
    """The ``warning`` event of ``rule``: every rule's warning is built here, so it carries the rule's one advice."""
    return HealthWarning(rule, severity, step, message, rule.advice, evidence or {})


def config_warnings(rl_kl_coef: float, num_generations: int) -> list[HealthWarning]:
    """Warnings a config earns before the first step."""
    out = []
    if rl_kl_coef == 0:
        out.append(
            warning(
                HealthRule.KL_NOT_MEASURED,
                Severity.INFO,
                0,
                "rl_kl_coef is 0: KL to the reference model is "
                "not measured or penalised, so a drifting policy will not show in the KL chart.",
                {"rl_kl_coef": 0},
            )
        )
    if num_generations < 4:
        out.append(
            warning(
                HealthRule.SMALL_GROUPS,
                Severity.INFO,
                0,
                f"rl_num_generations is {num_generations}: advantages from groups this small are noisy.",
                {"rl_num_generations": num_generations},
            )
        )
    return out


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
        # each metric rule's check, in the order they are evaluated (and their warnings listed) at a step
        self._checks: dict[HealthRule, Callable[[int, dict], HealthWarning | None]] = {
            HealthRule.MODE_COLLAPSE: self._mode_collapse,
            HealthRule.KL_EXPLOSION: self._kl_explosion,
            HealthRule.ENTROPY_COLLAPSE: self._entropy_collapse,
            HealthRule.NO_LEARNING_SIGNAL: self._no_learning_signal,
            HealthRule.REWARD_PLATEAU: self._reward_plateau,
            HealthRule.NON_FINITE: self._non_finite,
            HealthRule.TRUNCATION: self._truncation,
        }
        self.rules = {rule: _Rule(rearm=self.t.window) for rule in self._checks}
        self.rules[HealthRule.NON_FINITE] = _Rule(rearm=1)
        self.rules[HealthRule.REWARD_PLATEAU] = _Rule(rearm=self.t.plateau_window)

    def feed(self, step: int, metrics: dict) -> list[HealthWarning]:
        self.history.append((step, metrics))
        entropy = metrics.get("entropy")
        if finite(entropy) and len(self._early_entropy) < 3:
            self._early_entropy.append(entropy)
            self.entropy_baseline = max(self._early_entropy)
        fired = []
        for rule, check in self._checks.items():
            found = check(step, metrics)
            if found is None:
                self.rules[rule].update(None, clear=self._back_to_normal(rule, metrics))
            elif self.rules[rule].update(found.severity):
                fired.append(found)
        return fired

    def _back_to_normal(self, rule: HealthRule, m: dict) -> bool:
        if rule is HealthRule.KL_EXPLOSION:
            return not finite(m.get("kl")) or m["kl"] < self.t.kl_rearm
        return True

    def _recent(self, key: str, n: int) -> list:
        values = [m.get(key) for _, m in list(self.history)[-n:]]
        return values if len(values) == n else []

    def _non_finite(self, step: int, m: dict) -> HealthWarning | None:
        bad = {k: m[k] for k in ("loss", "grad_norm", "reward") if k in m and not finite(m[k])}
        if not bad:
            return None
        shown = ", ".join(f"{k}={'None' if v is None else v}" for k, v in bad.items())
        return warning(
            HealthRule.NON_FINITE,
            Severity.CRITICAL,
            step,
            f"Non-finite values at step {step}: {shown}. The update that produced them may have damaged the weights.",
            {k: None if v is None else str(v) for k, v in bad.items()},
        )

    def _kl_explosion(self, step: int, m: dict) -> HealthWarning | None:
        t = self.t
        window = [m.get("kl") for _, m in list(self.history)[-3:]]
        if len(window) < 2 or not all(finite(v) for v in window):
            return None
        kls = cast(list[float], window)
        above = [v for v in kls if v > t.kl_high]
        evidence = {"kl_last_steps": kls, "threshold": t.kl_high}
        if len(above) >= 2 and kls[-1] > t.kl_high:
            severity = Severity.CRITICAL if kls[-1] > t.kl_critical else Severity.WARN
            return warning(
                HealthRule.KL_EXPLOSION,
                severity,
                step,
                f"KL to the reference model is {kls[-1]:.3g} "
                f"(above {t.kl_high} in {len(above)} of the last 3 steps): the policy is drifting fast.",
                evidence,
            )
        older = self._recent("kl", 4)
        if (
            older
            and all(finite(v) for v in older)
            and kls[-1] > t.kl_high / 2
            and older[0] > 0
            and kls[-1] >= t.kl_growth * older[0]
            and kls[0] < kls[1] < kls[2]
        ):
            return warning(
                HealthRule.KL_EXPLOSION,
                Severity.WARN,
                step,
                f"KL grew from {older[0]:.3g} to {kls[-1]:.3g} in 3 steps and is still rising.",
                {**evidence, "kl_3_steps_ago": older[0]},
            )
        return None

    def _entropy_low(self, n: int, factor: float) -> list | None:
        values = self._recent("entropy", n)
        if not values or not self.entropy_baseline or not all(finite(v) for v in values):
            return None
        return values if all(v < factor * self.entropy_baseline for v in values) else None

    def _entropy_collapse(self, step: int, m: dict) -> HealthWarning | None:
        values = self._entropy_low(self.t.window, self.t.entropy_collapse)
        baseline = self.entropy_baseline
        if values is None or baseline is None:
            return None
        severity = Severity.CRITICAL if values[-1] < self.t.entropy_collapse / 2 * baseline else Severity.WARN
        return warning(
            HealthRule.ENTROPY_COLLAPSE,
            severity,
            step,
            f"Entropy fell from {baseline:.3g} to "
            f"{values[-1]:.3g}: the policy now samples almost the same tokens every time.",
            {"entropy_start": baseline, "entropy_last_steps": values},
        )

    def _mode_collapse(self, step: int, m: dict) -> HealthWarning | None:
        t = self.t
        stds = self._recent("reward_std", t.window)
        zero = self._recent("frac_reward_zero_std", t.window)
        low_std = stds and all(finite(v) and v < t.reward_std_low for v in stds)
        same_groups = zero and all(finite(v) and v >= t.zero_std_frac for v in zero)
        entropy = self._entropy_low(t.window, t.entropy_falling)
        if not (low_std or same_groups) or entropy is None or self.entropy_baseline is None:
            return None
        return warning(
            HealthRule.MODE_COLLAPSE,
            Severity.CRITICAL if same_groups and low_std else Severity.WARN,
            step,
            f"Completions have become alike: reward_std {stds[-1]:.3g} and entropy {entropy[-1]:.3g} "
            f"(from {self.entropy_baseline:.3g}) over the last {t.window} steps. GRPO gets no signal "
            "from groups whose completions score the same.",
            {"reward_std": stds, "frac_reward_zero_std": zero, "entropy": entropy},
        )

    def _no_learning_signal(self, step: int, m: dict) -> HealthWarning | None:
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
        return warning(
            HealthRule.NO_LEARNING_SIGNAL,
            Severity.WARN,
            step,
            f"No learning signal for {n} steps: {kind} (reward {reward}), so every advantage is zero.",
            {"frac_reward_zero_std": zero, "reward_std": stds, "reward": reward},
        )

    def _reward_plateau(self, step: int, m: dict) -> HealthWarning | None:
        n = self.t.plateau_window
        rewards = self._recent("reward", n)
        if not rewards or not all(finite(v) for v in rewards):
            return None
        first, second = mean(rewards[: n // 2]), mean(rewards[n // 2 :])
        if second - first >= self.t.plateau_min_gain or max(rewards) >= 0.99:
            return None
        return warning(
            HealthRule.REWARD_PLATEAU,
            Severity.INFO,
            step,
            f"Reward has not improved over the last {n} steps ({first:.3g} then {second:.3g}).",
            {"first_half_mean": first, "second_half_mean": second},
        )

    def _truncation(self, step: int, m: dict) -> HealthWarning | None:
        values = self._recent("completions/clipped_ratio", self.t.window)
        if not values or not all(finite(v) and v >= self.t.truncation_ratio for v in values):
            return None
        return warning(
            HealthRule.TRUNCATION,
            Severity.WARN,
            step,
            f"{values[-1]:.0%} of completions hit "
            f"rl_max_new_tokens over the last {self.t.window} steps; they are cut off before they finish.",
            {"clipped_ratio": values},
        )


def replay(metrics_events: list[Metrics], thresholds: Thresholds | None = None) -> list[HealthWarning]:
    """Every warning the rules give over a recorded stream of ``metrics`` events."""
    monitor = HealthMonitor(thresholds)
    out = []
    for event in metrics_events:
        out += monitor.feed(event.step, event.values)
    return out


def threshold_names() -> list[str]:
    return [f.name for f in dataclasses.fields(Thresholds)]
