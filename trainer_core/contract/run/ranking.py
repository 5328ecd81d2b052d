"""How a run's held-out evals are ranked: ``--keep-best METRIC[:K]`` read, and the metric a run is ranked by.

One rule for every reader: the ledger marking the best checkpoint, the summary a finished run stores, the
monitor's eval panel and Checkpoints tab. A leaf of the run format (it imports only the event schema), so the
summary, which the run folder imports, can use it as the ledger does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from trainer_core.contract.run.events import Eval

DEFAULT_KEEP_BEST = 1


@dataclass(frozen=True)
class KeepBest:
    """``--keep-best METRIC[:K]``: keep the K checkpoints with the highest held-out ``metric``."""

    metric: str
    count: int = DEFAULT_KEEP_BEST


def parse_keep_best(value: object) -> KeepBest | None:
    """``METRIC`` or ``METRIC:K``; None for no setting. Raises ValueError for anything else."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ValueError(f"keep_best must be text METRIC[:K], got {value!r}.")
    metric, sep, count = value.strip().rpartition(":")
    if not sep:
        metric, count = value.strip(), str(DEFAULT_KEEP_BEST)
    if not metric.strip() or not count.isdigit() or int(count) < 1:
        raise ValueError(
            f"keep_best must be METRIC or METRIC:K with K a whole number of at least 1, got {value!r}. "
            "Example: --keep-best answer_correct:2"
        )
    return KeepBest(metric.strip(), int(count))


def ranking_metric(keep_best: object, evals: Mapping[int, Eval] | Iterable[Eval]) -> str | None:
    """The metric a run is ranked by: its ``keep_best`` setting's (a setting that does not parse counts as none),
    else its first task metric, else ``reward``; None without evals (given by step, or as they come)."""
    try:
        keep = parse_keep_best(keep_best)
    except ValueError:
        keep = None
    if keep is not None:
        return keep.metric
    evals = list(evals.values() if isinstance(evals, Mapping) else evals)
    for event in evals:
        task = event.task_metrics
        if isinstance(task, list) and task and isinstance(task[0], str):
            return task[0]
    return "reward" if evals else None
