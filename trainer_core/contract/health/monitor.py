"""Training health: rules that turn the metrics stream into warnings with advice.

Stdlib only: the trainer runs these rules as it logs (so every viewer, now or next week, reads the same
``warning`` events) and the app can replay them over a recorded stream. Each rule looks at a window of
steps and fires once when its condition holds long enough (a one-step spike never fires, except the spike
rules, whose baseline is robust); it re-arms only after the condition has been clear for a window, so a
noisy metric does not flap. KL re-arms only once it has fallen well below its threshold (``kl_rearm``): a KL
hovering around ``kl_high`` is one warning, not ten. A rule whose metric this TRL version does not log says
so once, as an ``info`` warning of that rule, and then stays quiet rather than fire on a missing value.
The rules' names and advice are ``health_rules.HealthRule``; ``warning`` builds every rule's event from them.
The reward-hacking rules are in health/hacking.py, the drift rules in health/drift.py, the tool rules in
health/tools.py. ``reward_task_divergence`` is judged at each held-out eval instead (``feed_eval``, with
health/divergence.py), on the ``eval`` events alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from statistics import fmean
from typing import cast

import trainer_core.contract.health.drift as health_drift
import trainer_core.contract.health.hacking as health_hacking
import trainer_core.contract.health.tools as health_tools
from trainer_core.contract.health.core import FireOnce, RunFacts, Thresholds, Window, threshold_names
from trainer_core.contract.health.divergence import DivergenceJudge
from trainer_core.contract.health.sample_stats import NEAR_DUPLICATES, REPETITION
from trainer_core.contract.run.events import Eval, HealthWarning, Metrics, warning
from trainer_core.contract.run.json_values import all_numbers, is_number
from trainer_core.contract.run.rules import HealthRule, RuleGroup, rules_of
from trainer_core.contract.run.severity import Severity

__all__ = [
    "ADVICE",
    "DRIFT_RULES",
    "RULES",
    "HealthMonitor",
    "RunFacts",
    "Thresholds",
    "config_warnings",
    "drift_rules",
    "replay",
    "threshold_names",
    "warning",
]

METRIC_RULES = rules_of(RuleGroup.METRIC)
CONFIG_RULES = rules_of(RuleGroup.CONFIG, RuleGroup.DATASET, RuleGroup.RESUME)  # written once, at the start
WATCHER_RULES = rules_of(RuleGroup.WATCHER)
RULES = tuple(rule.value for rule in HealthRule)
STOPPABLE_RULES = tuple(rule.value for rule in HealthRule if rule.stoppable)
ADVICE = {rule.value: rule.advice for rule in HealthRule}
SWITCHES = ("disk_check",)  # thresholds that are on/off: 0 is allowed (every other one must be positive)
DRIFT_RULES = (HealthRule.GRAD_NORM_SPIKE, HealthRule.LOSS_SPIKE, HealthRule.CLIP_RATIO_HIGH)
"""The rules that watch for drift without KL; with vLLM, ``sampling_mismatch`` too."""

Check = Callable[[int, dict], HealthWarning | None]

# the metrics each rule reads (it can judge when any one is logged), and when it applies at all
_NEEDS: dict[HealthRule, tuple[tuple[str, ...], Callable[[RunFacts], bool]]] = {
    HealthRule.MODE_COLLAPSE: (("entropy",), lambda f: True),
    HealthRule.KL_EXPLOSION: (("kl",), lambda f: f.kl_measured is True),
    HealthRule.ENTROPY_COLLAPSE: (("entropy",), lambda f: True),
    HealthRule.NO_LEARNING_SIGNAL: (("frac_reward_zero_std", "reward_std"), lambda f: True),
    HealthRule.REWARD_PLATEAU: (("reward",), lambda f: True),
    HealthRule.TRUNCATION: (("completions/clipped_ratio",), lambda f: True),
    HealthRule.ONE_REWARD_CARRIES: ((), lambda f: (f.reward_funcs or 0) >= 2),
    HealthRule.LENGTH_EXPLOITATION: ((health_hacking.MEAN_LENGTH,), lambda f: True),
    HealthRule.DEGENERATE_COMPLETIONS: ((REPETITION, NEAR_DUPLICATES), lambda f: f.reward_funcs is not None),
    HealthRule.GRAD_NORM_SPIKE: (("grad_norm",), lambda f: True),
    HealthRule.LOSS_SPIKE: (("loss",), lambda f: True),
    HealthRule.CLIP_RATIO_HIGH: ((health_drift.CLIP_REGION,), lambda f: True),
    HealthRule.SAMPLING_MISMATCH: ((health_drift.IS_RATIO, health_drift.LOGP_DIFFERENCE), lambda f: f.use_vllm),
    HealthRule.TOOL_FAILURES: ((health_tools.FAILURE_FREQUENCY,), lambda f: f.tools),
    HealthRule.TOOL_UNUSED: ((health_tools.CALL_FREQUENCY,), lambda f: f.tools),
    HealthRule.TURN_LIMIT: ((health_tools.TURN_LIMIT_SHARE,), lambda f: f.tools),
}

# a rule that reads metrics can fire only once one of them has been logged; until then its check is skipped
_READS: dict[HealthRule, tuple[str, ...]] = {rule: keys for rule, (keys, _) in _NEEDS.items() if keys}


def drift_rules(use_vllm: bool = False) -> tuple[HealthRule, ...]:
    return (*DRIFT_RULES, HealthRule.SAMPLING_MISMATCH) if use_vllm else DRIFT_RULES


def config_warnings(rl_kl_coef: float, num_generations: int, use_vllm: bool = False) -> list[HealthWarning]:
    """Warnings a config earns before the first step."""
    out = []
    if rl_kl_coef == 0:
        watching = [rule.value for rule in drift_rules(use_vllm)]
        out.append(
            warning(
                HealthRule.KL_NOT_MEASURED,
                Severity.INFO,
                0,
                "rl_kl_coef is 0: KL to the reference model is not measured or penalised, so a drifting policy "
                f"will not show in the KL chart and kl_explosion cannot fire. Still watching for drift: "
                f"{', '.join(watching)}.",
                {"rl_kl_coef": 0, "drift_rules": watching},
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


class HealthMonitor:
    """Feed it each logged step's metrics; it returns the warnings that fire at that step."""

    def __init__(self, thresholds: Thresholds | None = None, facts: RunFacts | None = None):
        self.t = thresholds or Thresholds()
        self.facts = facts or RunFacts()
        self._says_not_logged = facts is not None  # a replay without the run's facts cannot tell
        t = self.t
        size = max(t.plateau_window, t.window, t.reward_flat_steps, t.spike_history + 1, 8)
        self.window = Window(size, t.baseline_steps)
        self.entropy_baseline: float | None = None
        self._early_entropy: list[float] = []
        self._said_not_logged: set[HealthRule] = set()

        def family(check) -> Check:
            return lambda step, m: check(self.window, self.t, self.facts, step, m)

        # each metric rule's check, in the order they are evaluated (and their warnings listed) at a step
        self._checks: dict[HealthRule, Check] = {
            HealthRule.MODE_COLLAPSE: self._mode_collapse,
            HealthRule.KL_EXPLOSION: self._kl_explosion,
            HealthRule.ENTROPY_COLLAPSE: self._entropy_collapse,
            HealthRule.NO_LEARNING_SIGNAL: self._no_learning_signal,
            HealthRule.REWARD_PLATEAU: self._reward_plateau,
            HealthRule.NON_FINITE: self._non_finite,
            HealthRule.TRUNCATION: self._truncation,
            HealthRule.ONE_REWARD_CARRIES: family(health_hacking.one_reward_carries),
            HealthRule.LENGTH_EXPLOITATION: family(health_hacking.length_exploitation),
            HealthRule.DEGENERATE_COMPLETIONS: family(health_hacking.degenerate_completions),
            HealthRule.GRAD_NORM_SPIKE: family(health_drift.grad_norm_spike),
            HealthRule.LOSS_SPIKE: family(health_drift.loss_spike),
            HealthRule.CLIP_RATIO_HIGH: family(health_drift.clip_ratio_high),
            HealthRule.SAMPLING_MISMATCH: family(health_drift.sampling_mismatch),
            HealthRule.TOOL_FAILURES: family(health_tools.tool_failures),
            HealthRule.TOOL_UNUSED: family(health_tools.tool_unused),
            HealthRule.TURN_LIMIT: family(health_tools.turn_limit),
            HealthRule.REWARD_TASK_DIVERGENCE: lambda step, m: None,  # judged at each eval: feed_eval
        }
        self.rules = {rule: FireOnce(rearm=t.window) for rule in self._checks}
        self.rules[HealthRule.NON_FINITE] = FireOnce(rearm=1)
        self.rules[HealthRule.REWARD_PLATEAU] = FireOnce(rearm=t.plateau_window)
        self.rules[HealthRule.ONE_REWARD_CARRIES] = FireOnce(rearm=t.reward_flat_steps)
        self.divergence = DivergenceJudge(t)  # keeps its own fire-once state, one per held-out metric
        entries = self._entries()
        self._plan = [
            (rule, check, self.rules[rule], _READS.get(rule), entries.get(rule)) for rule, check in self._checks.items()
        ]

    @property
    def history(self):
        return self.window.steps

    def feed(self, step: int, metrics: dict) -> list[HealthWarning]:
        beta, loss, kl = self.facts.kl_coef, metrics.get("loss"), metrics.get("kl")
        if beta and is_number(loss) and is_number(kl):
            metrics = {**metrics, health_drift.POLICY_LOSS: loss - beta * kl}
        self.window.append(step, metrics)
        entropy = metrics.get("entropy")
        if is_number(entropy) and len(self._early_entropy) < 3:
            self._early_entropy.append(entropy)
            self.entropy_baseline = max(self._early_entropy)
        fired = self._not_logged(step)
        seen = self.window.seen
        for rule, check, state, reads, entry in self._plan:
            if reads is not None and seen.isdisjoint(reads):
                continue  # none of its metrics was ever logged: it cannot fire, and never has
            found = check(step, metrics) if entry is None or entry(metrics) else None
            if found is None:
                if state.fired:
                    state.update(None, clear=self._back_to_normal(rule, metrics))
            elif state.update(found.severity):
                fired.append(found)
        return fired

    def _entries(self) -> dict[HealthRule, Callable[[dict], bool]]:
        """For the rules that judge a window where every step must pass, what this step's own values must pass: where
        they do not, the rule's check cannot find anything, and is not run (most steps of a healthy run)."""
        t = self.t

        def entropy_below(factor: float) -> Callable[[dict], bool]:
            def entry(m: dict) -> bool:
                entropy, base = m.get("entropy"), self.entropy_baseline
                return bool(base) and is_number(entropy) and entropy < factor * base

            return entry

        def at_least(key: str, low: float) -> Callable[[dict], bool]:
            return lambda m: is_number(value := m.get(key)) and value >= low

        def no_signal(m: dict) -> bool:
            zero, std = m.get("frac_reward_zero_std"), m.get("reward_std")
            return (is_number(zero) and zero >= 0.99) or (is_number(std) and std == 0)

        def kl_high(m: dict) -> bool:
            kl = m.get("kl")
            return is_number(kl) and (kl > t.kl_high or kl >= t.kl_growth_floor)

        return {
            HealthRule.MODE_COLLAPSE: entropy_below(t.entropy_falling),
            HealthRule.KL_EXPLOSION: kl_high,
            HealthRule.ENTROPY_COLLAPSE: entropy_below(t.entropy_collapse),
            HealthRule.NO_LEARNING_SIGNAL: no_signal,
            HealthRule.TRUNCATION: at_least("completions/clipped_ratio", t.truncation_ratio),
            HealthRule.CLIP_RATIO_HIGH: at_least(health_drift.CLIP_REGION, t.clip_ratio_high),
        }

    def feed_eval(self, event: Eval) -> list[HealthWarning]:
        """The warnings that fire at a held-out eval (``reward_task_divergence``); call it after each one, the
        base model's at step 0 included (it is the baseline)."""
        return self.divergence.feed(event)

    def _not_logged(self, step: int) -> list[HealthWarning]:
        """Once, after ``metric_grace`` steps: each rule that applies to this run but whose metrics never came."""
        if not self._says_not_logged or self.window.count != self.t.metric_grace:
            return []
        out = []
        for rule, (keys, applies) in _NEEDS.items():
            if not keys or not applies(self.facts) or not self.window.seen.isdisjoint(keys):
                continue
            self._said_not_logged.add(rule)
            out.append(
                warning(
                    rule,
                    Severity.INFO,
                    step,
                    f"{rule.value} cannot judge this run: this TRL version does not log "
                    f"{' or '.join(keys)} (none in the first {self.window.count} steps).",
                    {"metric_not_logged": list(keys)},
                )
            )
        return out

    def _back_to_normal(self, rule: HealthRule, m: dict) -> bool:
        if rule is HealthRule.KL_EXPLOSION:
            return not is_number(m.get("kl")) or m["kl"] < self.t.kl_rearm
        return True

    def _recent(self, key: str, n: int) -> list:
        return self.window.recent(key, n)

    def _non_finite(self, step: int, m: dict) -> HealthWarning | None:
        bad = {k: m[k] for k in ("loss", "grad_norm", "reward") if k in m and not is_number(m[k])}
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
        window = self.window.recent("kl", 3) or self.window.recent("kl", 2)
        if len(window) < 2 or not all_numbers(window):
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
            and all_numbers(older)
            and kls[-1] >= t.kl_growth_floor
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
        if not values or not self.entropy_baseline or not all_numbers(values):
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
        low_std = stds and all(is_number(v) and v < t.reward_std_low for v in stds)
        same_groups = zero and all(is_number(v) and v >= t.zero_std_frac for v in zero)
        entropy = self._entropy_low(t.window, t.entropy_falling)
        if not (low_std or same_groups) or entropy is None or self.entropy_baseline is None:
            return None
        return warning(
            HealthRule.MODE_COLLAPSE,
            Severity.CRITICAL if same_groups and low_std else Severity.WARN,
            step,
            f"Completions have become alike: reward_std {_shown(stds[-1])} and entropy {entropy[-1]:.3g} "
            f"(from {self.entropy_baseline:.3g}) over the last {t.window} steps. GRPO gets no signal "
            "from groups whose completions score the same.",
            {"reward_std": stds, "frac_reward_zero_std": zero, "entropy": entropy},
        )

    def _no_learning_signal(self, step: int, m: dict) -> HealthWarning | None:
        n = self.t.no_signal_steps
        zero = self._recent("frac_reward_zero_std", n)
        stds = self._recent("reward_std", n)
        if zero and all_numbers(zero):
            flat = all(v >= 0.99 for v in zero)
        else:
            flat = bool(stds) and all(is_number(v) and v == 0 for v in stds)
        if not flat or self._entropy_low(n, self.t.entropy_falling) is not None:
            return None
        reward = m.get("reward")
        kind = "every group scores the same"
        if is_number(reward) and reward >= 0.99:
            kind = "rewards are saturated: every completion already scores the maximum"
        elif is_number(reward) and reward <= 0.01:
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
        if not rewards or not all_numbers(rewards):
            return None
        first, second = fmean(rewards[: n // 2]), fmean(rewards[n // 2 :])
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
        if not values or not all(is_number(v) and v >= self.t.truncation_ratio for v in values):
            return None
        return warning(
            HealthRule.TRUNCATION,
            Severity.WARN,
            step,
            f"{values[-1]:.0%} of completions hit "
            f"rl_max_new_tokens over the last {self.t.window} steps; they are cut off before they finish.",
            {"clipped_ratio": values},
        )


def _shown(value: object) -> str:
    """A window's value in a message: a number to 3 figures, anything else (a step that lacks it) as it is."""
    return f"{value:.3g}" if is_number(value) else str(value)


def replay(events: Sequence[Metrics | Eval], thresholds: Thresholds | None = None) -> list[HealthWarning]:
    """Every warning the rules give over a recorded stream of ``metrics`` (and ``eval``) events."""
    monitor = HealthMonitor(thresholds)
    out = []
    for event in events:
        out += monitor.feed_eval(event) if isinstance(event, Eval) else monitor.feed(event.step, event.values)
    return out
