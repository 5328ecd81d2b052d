"""Healthy held-out eval sequences for ``reward_task_divergence``'s false-alarm count (bench.health_false_alarms).

The CPU demo's runs are too short and its held-out set too small to put this rule through its paces, so the
bench also judges seeded synthetic runs that are healthy by construction: the training reward follows a
saturating curve (or stays flat) with its own measurement noise; each held-out metric follows the reward's
true trend times a coupling, plus a random walk, plus the noise of an eval's mean (the spread across prompts
/ sqrt(prompts)). A warning on any of them is a false alarm. The unit tests judge the same sequences.
"""

from __future__ import annotations

import math
import random
from collections import Counter

from trainer_core.contract.config.checks import REMEDY_SEVERITIES
from trainer_core.contract.health.core import Thresholds
from trainer_core.contract.health.monitor import HealthMonitor
from trainer_core.contract.health.remedy_plan import RemedySettings
from trainer_core.contract.run.events import Eval, HealthWarning

TASK_METRIC = "answer_correct"


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def healthy_eval_sequence(rng: random.Random, flat: bool = False) -> list[Eval]:
    """One healthy run's evals, the base model's at step 0 first; ``flat``: a reward that does not rise."""
    evals, every = rng.randint(6, 16), rng.choice((10, 25, 50))
    prompts, spread = rng.choice((16, 32, 64)), rng.uniform(0.1, 0.35)
    error = spread / math.sqrt(prompts)
    reward0, gain = rng.uniform(0.1, 0.5), 0.0 if flat else rng.uniform(0.05, 0.45)
    pace, coupling, reward_noise = rng.uniform(0.5, 3.0), rng.uniform(0.3, 1.2), rng.uniform(0.005, 0.03)
    metric0, walk, drift = rng.uniform(0.1, 0.6), rng.uniform(0.0, 0.01), 0.0
    with_task = rng.random() < 0.5
    out = []
    for i in range(evals):
        trend = gain * (1 - math.exp(-pace * i / evals))
        drift += rng.gauss(0, walk) if i else 0.0
        held_out_reward = _clip(reward0 + trend + rng.gauss(0, error))
        metrics = {"reward": {"mean": held_out_reward, "std": spread}}
        if with_task:
            task = _clip(metric0 + coupling * trend + drift + rng.gauss(0, error))
            metrics[TASK_METRIC] = {"mean": task, "std": spread}
        train_reward = None if i == 0 else reward0 + trend + rng.gauss(0, reward_noise)
        out.append(
            Eval(
                step=i * every,
                metrics=metrics,
                task_metrics=[TASK_METRIC] if with_task else [],
                prompts=prompts,
                base=i == 0,
                train_reward=train_reward,
            )
        )
    return out


def eval_false_alarms(
    sequences: int, seed: int = 0, thresholds: Thresholds | None = None, remedies: Counter | None = None
) -> tuple[Counter, int]:
    """({(rule, severity): warnings}, evals judged) over ``sequences`` healthy runs, a third of them flat;
    ``remedies``: counts, by remedy severity, the warnings a remedy for every rule would act on."""
    rng = random.Random(seed)
    alarms: Counter[tuple[str, str]] = Counter()
    judged = 0
    for i in range(sequences):
        monitor = HealthMonitor(thresholds)
        for event in healthy_eval_sequence(rng, flat=i % 3 == 2):
            judged += 1
            for w in monitor.feed_eval(event):
                alarms[(str(w.rule), str(w.severity))] += 1
                if remedies is not None:
                    count_remedies(w, remedies)
    return alarms, judged


def count_remedies(found: HealthWarning, remedies: Counter) -> None:
    """Count ``found`` under each remedy severity (critical, warn) at which a remedy would act on it."""
    for severity in REMEDY_SEVERITIES:
        if RemedySettings.every_rule(severity).acts_on(found):
            remedies[severity] += 1
