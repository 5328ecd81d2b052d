"""What every health rule shares: the thresholds, the facts of the run they judge, the window of logged
steps, and the fire-once bookkeeping.

Split from health/monitor.py so the rule families (the original metric rules there, reward hacking in
health/hacking.py, drift without KL in health/drift.py, the held-out divergence in health/divergence.py) each
read on their own and import this, not each other. Stdlib only.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import KeysView
from dataclasses import dataclass
from itertools import islice, repeat
from statistics import fmean, median

from trainer_core.contract.run.json_values import all_numbers, is_number
from trainer_core.contract.run.severity import Severity


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
    kl_growth: float = 4.0  # KL grown this many times in 3 rising steps is an explosion in the making ...
    kl_growth_floor: float = 0.4  # ... once it reaches this absolute KL: a small KL that grows is never an explosion
    kl_rearm: float = 0.25
    no_signal_steps: int = 3
    plateau_window: int = 60
    plateau_min_gain: float = 0.02
    truncation_ratio: float = 0.5
    # reward hacking and degenerate output (health/hacking.py)
    baseline_steps: int = 5  # a metric's baseline: the mean of its first logged steps
    reward_gain: float = 0.1  # a rise of the reward (or of one reward function) this large counts as learning
    reward_share_high: float = 0.8  # one function's share of the summed reward that 'carries' the run
    reward_flat_steps: int = 10  # how long another function must stay flat
    reward_flat_range: float = 0.02
    length_press: float = 0.8  # mean completion length at this fraction of max_completion_length presses on it
    length_growth: float = 1.25  # length grown this many times over its baseline
    length_reward_corr: float = 0.7  # per-step correlation of completion length and reward
    length_short: float = 0.25  # completions shrunk below this fraction of their baseline length
    repetition_high: float = 0.5  # share of a completion's word pairs that repeat an earlier pair
    repetition_rise: float = 0.2
    near_duplicates_high: float = 0.75  # share of a group's completions that nearly copy another
    # drift and instability without KL (health/drift.py)
    spike_history: int = 20  # steps of robust baseline (median and MAD) behind a spike
    spike_min_history: int = 10  # no spike is judged before this many steps: warm-up is not a spike
    spike_mad: float = 10.0  # a spike is this many robust deviations above the median
    spike_factor: float = 3.0  # ... and this many times the median (grad_norm) or the largest earlier swing (loss)
    loss_spike_floor: float = 0.1  # a loss spike moves at least this far: smaller moves are noise (often 0 ± 1e-8)
    clip_ratio_high: float = 0.2  # share of tokens whose policy ratio is clipped (clip_ratio/region_mean)
    is_ratio_band: float = 0.25  # vLLM importance-sampling ratio outside [1/(1+b), 1+b]
    logp_difference_high: float = 0.3  # mean |log p trainer - log p vLLM| per token
    metric_grace: int = 3  # logged steps after which a metric never seen is said to be not logged
    # agentic runs (health/tools.py)
    tool_failure_high: float = 0.5  # failed calls / calls
    tool_grace: int = 10  # steps before tool_unused can judge
    turn_limit_high: float = 0.5  # share of episodes stopped at --max-tool-calls
    # the training reward and a held-out metric part ways (health/divergence.py), judged at each eval
    divergence_evals: int = 3  # how many recent evals (after the base model's) are judged together
    divergence_reward_rise: float = 0.1  # the training reward rose at least this much over those evals
    divergence_metric_drop: float = 0.05  # a held-out metric's mean fell at least this far from their best
    divergence_noise: float = 3.0  # ... and this many standard errors of the two evals' means (std/sqrt(prompts))
    # watcher rules
    stall_factor: float = 10.0
    stall_min_seconds: float = 60.0
    disk_check: int = 1  # 0: a run the disk cannot hold starts anyway, with a critical warning
    disk_margin: float = 1.2  # warn before launch when free space is below this x the estimated need
    disk_warn_percent: float = 90.0
    disk_critical_percent: float = 97.0

    @classmethod
    def from_mapping(cls, values: dict | None) -> Thresholds:
        return cls(**(values or {}))


@dataclass(frozen=True)
class RunFacts:
    """What the rules know of the run beyond its metrics; None: unknown (a replay of a recorded stream)."""

    max_completion_length: int | None = None
    reward_funcs: int | None = None  # how many reward functions: one_reward_carries needs two
    use_vllm: bool = False
    kl_measured: bool | None = None  # beta > 0: kl_explosion can judge
    kl_coef: float | None = None  # beta: loss_spike judges the loss without its KL term (kl has its own rule)
    tools: bool = False  # the model can call tools while it generates


class FireOnce:
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


class Window:
    """The last logged steps, and each metric's baseline: the mean of its first ``baseline_steps`` values.

    Each metric ever logged also has a column of its values over the window (None where a step lacks it), kept
    as the steps come: the rules read some twenty windows a step, each then a slice in C."""

    def __init__(self, size: int, baseline_steps: int):
        self.steps: deque[tuple[int, dict]] = deque(maxlen=size)
        self.baseline_steps = baseline_steps
        self._early: dict[str, list[float]] = {}
        self._filling: dict[str, list[float]] = {}  # the early values of the metrics still short of a baseline
        self._columns: dict[str, deque] = {}
        self.count = 0

    @property
    def seen(self) -> KeysView[str]:
        """Every metric logged so far: those with a column."""
        return self._columns.keys()

    def append(self, step: int, metrics: dict) -> None:
        self.steps.append((step, metrics))
        self.count += 1
        columns, filling = self._columns, self._filling
        for key, value in metrics.items():
            column = columns.get(key)
            if column is None:
                column = columns[key] = deque(repeat(None, len(self.steps) - 1), maxlen=self.steps.maxlen)
                self._early[key] = filling[key] = []
            column.append(value)
            early = filling.get(key)
            if early is not None and is_number(value):
                early.append(value)
                if len(early) >= self.baseline_steps:
                    del filling[key]
        if len(columns) != len(metrics):
            for key in columns.keys() - metrics.keys():
                columns[key].append(None)

    def recent(self, key: str, n: int) -> list:
        """The last ``n`` values of ``key`` (None where a step lacks it), or [] before there are ``n`` steps."""
        if n <= 0 or len(self.steps) < n:
            return []
        column = self._columns.get(key)
        if column is None:
            return [None] * n
        return list(islice(column, len(column) - n, None))

    def recent_finite(self, key: str, n: int) -> list[float] | None:
        """The last ``n`` values of ``key`` when every one is a finite number, else None."""
        values = self.recent(key, n)
        return values if values and all_numbers(values) else None

    def baseline(self, key: str) -> float | None:
        """The mean of ``key``'s first values, once there are ``baseline_steps`` of them."""
        early = self._early.get(key, [])
        return fmean(early) if len(early) >= self.baseline_steps else None

    def before_last(self, key: str, n: int) -> list[float]:
        """The finite values of ``key`` in the ``n`` steps before the last one (a spike's baseline)."""
        column = self._columns.get(key)
        if column is None:
            return []
        last = len(column) - 1
        return [v for v in islice(column, max(last - n, 0), max(last, 0)) if is_number(v)]


def robust_spread(values: list[float]) -> tuple[float, float, float]:
    """(median, MAD scaled to a standard deviation, largest deviation from the median) of ``values``."""
    mid = median(values)
    deviations = [abs(v - mid) for v in values]
    return mid, 1.4826 * median(deviations), max(deviations)


def threshold_names() -> list[str]:
    return [f.name for f in dataclasses.fields(Thresholds)]
