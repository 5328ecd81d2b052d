"""The ``stall`` rule: no new step for several times the usual step time while the trainer is alive.

A hung trainer cannot report its own hang, so the rule is judged from outside it: by the run's own root
process, which writes the warning into events.jsonl with nobody watching (``trainer_core/root/stall_watch.py``),
and by every viewer over the run folder (``grpo-tui runs``/``watch``, the app). The thresholds are the
run's ``--health stall_factor=…`` and ``stall_min_seconds=…``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from statistics import median

from trainer_core.contract.health.core import Thresholds
from trainer_core.contract.run.events import HealthWarning, warning
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity


def stall_warning(
    step_times: Sequence[float], last_step: int, now: float, process_alive: bool, thresholds: Thresholds | None = None
) -> HealthWarning | None:
    """``stall`` when no step has landed for k x the median step time while the trainer is alive."""
    t = thresholds or Thresholds()
    if not process_alive or len(step_times) < 3:
        return None
    deltas = [b - a for a, b in pairwise(step_times) if b >= a]
    typical = median(deltas[-20:]) if deltas else 0.0
    limit = max(t.stall_factor * typical, t.stall_min_seconds)
    waited = now - step_times[-1]
    if waited <= limit:
        return None
    severity = Severity.CRITICAL if waited > 3 * limit else Severity.WARN
    return warning(
        HealthRule.STALL,
        severity,
        last_step,
        f"No new step for {waited:.0f}s after step {last_step}; a step usually takes {typical:.1f}s.",
        {
            "seconds_since_last_step": round(waited, 1),
            "median_step_seconds": round(typical, 3),
            "limit_seconds": round(limit, 1),
        },
    )
