"""``reward_task_divergence``: the training reward keeps rising while a held-out metric falls.

Why a rule of its own, judged on the ``eval`` events alone: every other metric rule reads the training stream,
where a gamed reward looks like learning. Only a metric measured apart from the training prompts can show that
the reward is being earned without the task, so this rule reads the held-out evals (``run/events.Eval``) and
the training reward each one recorded (``train_reward``), nothing else. The trainer calls it after each eval
through ``HealthMonitor.feed_eval``; a viewer can replay a recorded run's evals the same way.

What is judged: each task metric (``event.task_metrics``: independent of the reward, such as
``answer_is_sentence``); a run without any is judged on its held-out ``reward`` instead, where a fall while
the training reward rises means over-fitting to the training prompts. Over the last ``divergence_evals``
evals after the base model's (step 0, the metric's *baseline*), the rule fires when the training reward
rose by ``divergence_reward_rise`` and the metric either

- fell from its best value in those evals by ``divergence_metric_drop`` and by ``divergence_noise`` standard
  errors of the two evals' means (``std / sqrt(prompts)`` each: a fall within one eval's noise is no fall), or
- stayed at or below its baseline in every one of them.

Severity: warn; critical when the metric's last value is at or below its baseline. Each metric fires once,
again at a higher severity (the monitor's convention), and re-arms only once its mean has recovered above the
value at which it fired by ``divergence_metric_drop``, so a metric hovering near its low is one warning.
Stdlib only.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from trainer_core.contract.health.core import Thresholds
from trainer_core.contract.run.events import Eval, HealthWarning, warning
from trainer_core.contract.run.json_values import all_numbers, is_number
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

HELD_OUT_REWARD = "reward"  # judged when a run has no task metric


@dataclass
class _Fired:
    severity: Severity
    value: float  # the metric's mean when the rule fired: it re-arms once the metric is back above it


def judged_metrics(event: Eval) -> list[str]:
    """The task metrics of ``event``, or its held-out reward when it has none."""
    names = [name for name in event.task_metrics if isinstance(name, str)] or [HELD_OUT_REWARD]
    return [name for name in names if name in event.metrics]


def _standard_error(event: Eval, name: str) -> float:
    """The standard error of ``name``'s mean in ``event`` (its std across prompts / sqrt(prompts)), 0 if unknown."""
    std = event.value(f"{name}/std")
    return std / math.sqrt(event.prompts) if std is not None and event.prompts > 0 else 0.0


class DivergenceJudge:
    """Feed it each ``eval`` event in order; it returns the ``reward_task_divergence`` warnings that fire."""

    def __init__(self, thresholds: Thresholds | None = None):
        self.t = thresholds or Thresholds()
        self.baseline: dict[str, float] = {}  # each metric's mean at the base model's eval (step 0)
        self.size = max(2, int(self.t.divergence_evals))  # evals judged together, after the base model's
        self.evals: deque[Eval] = deque(maxlen=self.size)
        self.fired: dict[str, _Fired] = {}

    def feed(self, event: Eval) -> list[HealthWarning]:
        if event.base:
            self.baseline = {name: v for name in event.metrics if (v := event.value(name)) is not None}
            return []
        if not is_number(event.train_reward):
            return []
        while self.evals and self.evals[-1].step >= event.step:  # a resumed run evaluates some steps again
            self.evals.pop()
        self.evals.append(event)
        out = []
        for name in judged_metrics(event):
            self._rearm(name, event.value(name))
            found = self._judge(name)
            fired = self.fired.get(name)
            if found is None or (fired is not None and found.severity.rank <= fired.severity.rank):
                continue
            self.fired[name] = _Fired(found.severity, found.evidence["metric_to"])
            out.append(found)
        return out

    def _rearm(self, name: str, value: float | None) -> None:
        fired = self.fired.get(name)
        if fired is not None and value is not None and value > fired.value + self.t.divergence_metric_drop:
            del self.fired[name]

    def _judge(self, name: str) -> HealthWarning | None:
        t, window = self.t, list(self.evals)
        values = [e.value(name) for e in window]
        rewards = [e.train_reward for e in window]
        if len(window) < self.size or not all_numbers((*values, *rewards)):
            return None
        values_f = [v for v in values if v is not None]
        rewards_f = [r for r in rewards if r is not None]
        if rewards_f[-1] - rewards_f[0] < t.divergence_reward_rise:
            return None
        base = self.baseline.get(name)
        best = max(range(len(values_f)), key=values_f.__getitem__)
        noise = t.divergence_noise * math.hypot(_standard_error(window[best], name), _standard_error(window[-1], name))
        fell = values_f[best] - values_f[-1] >= max(t.divergence_metric_drop, noise)
        if fell:
            start, how = values_f[best], "fell"
        elif base is not None and max(values_f) <= base:
            start, how = values_f[0], "stayed at or below its baseline"
        else:
            return None
        last = values_f[-1]
        steps = [e.step for e in window]
        baseline = "" if base is None else f" (baseline {base:.2f})"
        why = (
            "the reward is being earned without the task"
            if name != HELD_OUT_REWARD
            else "the model fits the training prompts, not held-out ones"
        )
        return warning(
            HealthRule.REWARD_TASK_DIVERGENCE,
            Severity.CRITICAL if base is not None and last <= base else Severity.WARN,
            window[-1].step,
            f"Held-out evals of steps {steps[0]}–{steps[-1]}: training reward {rewards_f[0]:.2f}→{rewards_f[-1]:.2f} "
            f"while held-out {name} {how} {start:.2f}→{last:.2f}{baseline}: {why}.",
            {
                "metric": name,
                "metric_from": start,
                "metric_to": last,
                "baseline": base,
                "reward_from": rewards_f[0],
                "reward_to": rewards_f[-1],
                "steps": steps,
                "values": values_f,
            },
        )
