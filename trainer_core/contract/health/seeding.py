"""A resumed leg's health monitor starts from the run's live history, not from nothing and not from abandoned steps.

The rules judge windows of steps and fire once until they re-arm, so a monitor that starts empty on a resume
misses a trend that began before the checkpoint, and one fed every line of events.jsonl would judge the steps a
rewind abandoned (run/rewinds.py): a ``kl_explosion`` that fired on them would stay fired and stay silent when
the KL explodes again after the rewind. ``seed`` feeds the monitor the live history up to the checkpoint's step:
its metrics and its held-out evals, in order, throwing away the warnings (they are on record already). The rules
then stand where they stood at that step of the live history, and a rule that fired only on the abandoned
stretch can fire again.
"""

from __future__ import annotations

import os

from trainer_core.contract.health.monitor import HealthMonitor
from trainer_core.contract.run.event_log import scan_events
from trainer_core.contract.run.events import Eval, Event, EventType, Metrics
from trainer_core.contract.run.rewinds import live

SEED_SCAN = (EventType.METRICS, EventType.EVAL, EventType.REWOUND)


def live_until(events: list[Event], step: int) -> list[Metrics | Eval]:
    """The metrics and evals of the live history of ``events`` (a run's, in file order) up to ``step``."""
    return [e for e in live(events) if isinstance(e, (Metrics, Eval)) and e.step <= step]


def seed(monitor: HealthMonitor, events: list[Event], step: int) -> HealthMonitor:
    """Feed ``monitor`` the live history of ``events`` up to ``step`` (the checkpoint a leg resumes from), dropping
    the warnings it gives; returns it."""
    for event in live_until(events, step):
        if isinstance(event, Eval):
            monitor.feed_eval(event)
        else:
            monitor.feed(event.step, event.values)
    return monitor


def seed_from_file(monitor: HealthMonitor, events_file: str | os.PathLike, step: int) -> HealthMonitor:
    """``seed`` from a run's events.jsonl (only its metrics, eval and rewound lines are parsed)."""
    events, _ = scan_events(events_file, SEED_SCAN)
    return seed(monitor, events, step)
