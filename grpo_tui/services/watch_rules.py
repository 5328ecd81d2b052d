"""Health rules only a viewer judges: a stalled trainer and a filling disk (why a run crashed is the contract's
``run/crash.py``, which the run's own summary uses too; the rules' names and advice are ``run/rules.py``).

A hung process cannot report its own hang, and a process killed by the kernel writes nothing, so these
run on the viewing side (``grpo-tui runs``/``watch``, the app) over the run folder: the metrics
timestamps, whether the process is alive, the error events and the end of trainer.log.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from statistics import median

from trainer_core.contract.health.monitor import Thresholds
from trainer_core.contract.run.disk import Usage, human
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


def disk_space_warning(
    space: Usage | None, last_step: int, thresholds: Thresholds | None = None, checkpoint_bytes: int | None = None
) -> HealthWarning | None:
    """``disk_space`` when the filesystem holding a live run passes ``disk_warn_percent`` (critical at
    ``disk_critical_percent``) used: the run fails at the first write that does not fit."""
    t = thresholds or Thresholds()
    if space is None or space.percent_used < t.disk_warn_percent:
        return None
    severity = Severity.CRITICAL if space.percent_used >= t.disk_critical_percent else Severity.WARN
    fits = ""
    if checkpoint_bytes:
        fits = f"; a checkpoint of this run takes {human(checkpoint_bytes)}"
        if checkpoint_bytes > space.free:
            fits += ", so the next one does not fit"
    return warning(
        HealthRule.DISK_SPACE,
        severity,
        last_step,
        f"The filesystem holding the run folder ({space.mount}) is {space.percent_used:.0f} % full: "
        f"{human(space.free)} free of {human(space.total)}{fits}.",
        {
            "filesystem": space.mount,
            "percent_used": round(space.percent_used, 1),
            "free_bytes": space.free,
            "total_bytes": space.total,
            "checkpoint_bytes": checkpoint_bytes,
            "threshold_percent": t.disk_critical_percent if severity is Severity.CRITICAL else t.disk_warn_percent,
        },
    )
