"""A resumed run's legs: the time it trained, without the pauses between one leg's end and the next one's start.

A resume (or an extension to a higher max steps) appends a new leg to the same run folder: a ``run_started``
event, then steps. Between the earlier leg's ``run_finished`` and that ``run_started`` the run did nothing, for
a minute or for a week, so elapsed time and steps per second must leave those pauses out, or an extended run
looks slower the longer it waited. A leg that ended without ``run_finished`` (lost) has no recorded end: its
time counts as training, up to the next start.

The pauses are counted once, from the events, when a leg ends (``pauses``, stored in the summary as
``paused``); while a resumed leg runs, state.json gives the newest pause (``resumed_at`` - ``before_resume``'s
``ended``) and the summary of the earlier end the ones before it (``paused_seconds``). So every reader of a
run's duration needs state.json alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from trainer_core.contract.run.events import Event, RunFinished, RunStarted
from trainer_core.contract.run.json_values import is_number

PAUSED_KEY = "paused"  # in a run's summary: seconds between its legs


def _time(value) -> float | None:
    return float(value) if is_number(value) else None


def pauses(events: Iterable[Event]) -> float:
    """Seconds from each ``run_finished`` to the ``run_started`` right after it, in events of a run in file order
    (any subset holding its ``run_started`` and ``run_finished`` events)."""
    total, finished = 0.0, None
    for event in events:
        if isinstance(event, RunFinished):
            finished = _time(event.time)
        elif isinstance(event, RunStarted):
            started = _time(event.time)
            if finished is not None and started is not None:
                total += max(0.0, started - finished)
            finished = None
    return round(total, 3)


def paused_seconds(state: dict) -> float:
    """The seconds between the run's legs as state.json knows them: the summary of its latest end, and while a
    resumed leg runs (or after it was lost), the pause before that leg too."""
    summary = state.get("summary")
    summary = summary if isinstance(summary, dict) else {}

    def recorded(ended) -> float:  # what the summary of the end at ``ended`` counted
        if ended is None or summary.get("ended") != ended:
            return 0.0
        return _time(summary.get(PAUSED_KEY)) or 0.0

    ended = _time(state.get("ended"))
    if ended is not None:
        return recorded(ended)
    before = state.get("before_resume")
    earlier = _time(before.get("ended")) if isinstance(before, dict) else None
    resumed = _time(state.get("resumed_at"))
    if earlier is None:
        return 0.0
    latest = resumed - earlier if resumed is not None and resumed > earlier else 0.0  # not yet restarted: none
    return recorded(earlier) + latest


def per_second(
    counts: Sequence[float], times: Sequence[float], starts: Sequence[float], window: int = 20
) -> float | None:
    """How fast ``counts`` (steps, tokens: cumulative, one per logged step at ``times``) grew over the last
    ``window`` logged steps, leaving out each interval a leg started in (``starts``: its ``run_started`` times),
    which holds a pause and perhaps a step counter that went back. None with less than two steps to go by."""
    n = min(len(counts), len(times), window)
    if n < 2:
        return None
    counts, times = list(counts[-n:]), list(times[-n:])
    inside = [s for s in starts if times[0] < s <= times[-1]]
    grown = seconds = 0.0
    for i in range(n - 1):
        t0, t1 = times[i], times[i + 1]
        if any(t0 < s <= t1 for s in inside):
            continue
        grown += counts[i + 1] - counts[i]
        seconds += t1 - t0
    return grown / seconds if seconds > 0 else None
