"""Health rules a viewer judges: a stalled trainer and a filling disk (why a run crashed is the contract's
``run/crash.py``, which the run's own summary uses too; the rules' names and advice are ``run/rules.py``).

A hung process cannot report its own hang, and a process killed by the kernel writes nothing, so these
run on the viewing side (``grpo-tui runs``/``watch``, the app) over the run folder: the metrics
timestamps, whether the process is alive, the error events and the end of trainer.log. The stall rule is
the contract's (``health/stall.py``): the run's own root judges it too, with nobody watching.
"""

from __future__ import annotations

from trainer_core.contract.health.monitor import Thresholds
from trainer_core.contract.health.stall import stall_warning
from trainer_core.contract.run.disk import Usage, human
from trainer_core.contract.run.events import HealthWarning, warning
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

__all__ = ["disk_space_warning", "stall_warning"]


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
