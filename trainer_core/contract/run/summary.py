"""A finished run's summary: what the runs list shows of it, computed once when the run ends.

Teams keep thousands of runs in one folder, and listing them must not read every run's events, log and
YAML config each time. So when a run ends (``RunFolder.record_end``, which every writer of an end goes
through) this computes the list's fields from the run folder once — a backward read of events.jsonl for
the last step, a byte scan for the warnings, config.yaml for the project and model and, for a failed run,
the watcher's crash verdict from the error events and the end of trainer.log, the held-out evaluation's
figures from the same scan's ``eval`` events (warnings and evals of the live history only: a rewind abandons the
later steps of the legs before it, ``rewinds.py``, and the summary counts the ``rewinds``), the pauses between a resumed run's legs (``legs.py``; its
``duration`` counts training time, not them), and the lines at the end of events.jsonl that are no event
(``line_check.py``) — and the state stores them as ``summary`` (docs/run-format.md).
A reader then needs one small JSON file per finished run.

A summary belongs to one end: it records that end's ``ended`` time and the size of events.jsonl it was
computed from, and a reader trusts it only while the state is final, has that ``ended`` and events.jsonl
still has that size (a resume, or a status written by anything but ``record_end``, leaves it stale). Otherwise,
and for runs that ended before summaries existed, a reader reads the files as before.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

from trainer_core.contract.run.crash import classify_crash
from trainer_core.contract.run.event_log import scan_events, tail_events
from trainer_core.contract.run.events import Error, Eval, EventType, HealthWarning, RunFinished, clean, decode
from trainer_core.contract.run.json_values import is_number, whole_or_none
from trainer_core.contract.run.legs import PAUSED_KEY, pauses
from trainer_core.contract.run.line_check import EVENTS_FILE, SkippedLines, check_end
from trainer_core.contract.run.ranking import ranking_metric
from trainer_core.contract.run.rewinds import split
from trainer_core.contract.run.status import Status

LOG_TAIL_BYTES = 64 * 1024
SUMMARY_KEY = "summary"
EVAL_KEY = "eval"  # the summary's held-out figures; absent from summaries written before it existed
SKIPPED_KEY = "skipped_lines"  # the end check of events.jsonl (line_check.py); absent before it existed
REWINDS_KEY = "rewinds"  # how many times the run went back to an older checkpoint; absent before rewinds existed
SUMMARY_SCAN = (
    EventType.WARNING,
    EventType.ERROR,
    EventType.RUN_STARTED,
    EventType.RUN_FINISHED,
    EventType.EVAL,
    EventType.REWOUND,
)


def _positive(value) -> int | None:
    return whole_or_none(value, 1)


def run_total(state: dict, config: dict) -> int | None:
    """Steps the run will take: the trainer's count once known, else the configured max_steps."""
    return _positive(state.get("max_steps")) or _positive(config.get("max_steps"))


def scan_warnings(path: str | os.PathLike, start: int = 0) -> tuple[int, str | None, int]:
    """``warn``/``critical`` warning events from byte ``start``: their count, the last one's rule, and the
    offset after the last complete line (to continue from)."""
    events, offset = scan_events(path, (EventType.WARNING,), start=start)
    return (*_alarming(events), offset)


def _alarming(events: list) -> tuple[int, str | None]:
    count, last = 0, None
    for event in events:
        if isinstance(event, HealthWarning) and event.severity.alarming:
            count, last = count + 1, event.rule
    return count, last


def log_tail(path: str | os.PathLike, size: int = LOG_TAIL_BYTES) -> str:
    """The last ``size`` bytes of a log, as text ('' when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - size))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def crash_verdict(events: list, log_file: str | os.PathLike) -> HealthWarning | None:
    """Why a run failed (``watch_rules.classify_crash``), from its ``error`` and ``run_finished`` events
    (the others are ignored) and the end of its log."""
    errors = [e for e in events if isinstance(e, Error)]
    finished = next((e for e in reversed(events) if isinstance(e, RunFinished)), None)
    return classify_crash(log_tail(log_file), errors, finished)


def eval_figures(evals: Mapping[int, Eval], metric: str | None) -> dict | None:
    """A run's held-out evaluation in three figures of its ranking ``metric``, each ``{step, value}``: the
    ``baseline`` (the base model's eval, step 0; None without one), the ``latest`` eval and the ``best`` one (the
    highest finite value, the later on a tie, as the ledger ranks checkpoints; None when none has a value).
    ``evals`` are by step; None without evals or a metric. What a summary stores as ``eval``, and what
    ``grpo-tui runs --json`` sends."""
    if not evals or not metric:
        return None
    base = evals.get(0) or next((e for e in evals.values() if e.base), None)
    newest = evals[max(evals)]
    scored = [(v, step) for step, e in evals.items() if (v := e.value(metric)) is not None and math.isfinite(v)]
    top = max(scored, default=None)
    return {
        "metric": metric,
        "baseline": None if base is None else {"step": base.step, "value": base.value(metric)},
        "latest": {"step": newest.step, "value": newest.value(metric)},
        "best": None if top is None else {"step": top[1], "value": top[0]},
    }


def summarize(folder, status: Status | str, state: dict | None = None, config: dict | None = None) -> dict:
    """The ``summary`` of a run that has just ended with ``status`` (after its ``run_finished`` event).

    ``folder`` is a ``RunFolder``; ``state`` and ``config`` are its state and config when already read.
    """
    status = Status(status)
    state = folder.read_state() if state is None else state
    started, ended = state.get("started"), state.get("ended")
    config = folder.read_config() if config is None else config
    events_file = Path(folder.events_file)
    try:
        size = events_file.stat().st_size
    except OSError:
        size = 0
    last_event, last = tail_events(events_file)
    last_time = last_event.time if last_event is not None and is_number(last_event.time) else None
    # one byte scan of the events for the warnings, a failed run's errors, the evals and the legs' ends and starts
    events, _ = scan_events(events_file, SUMMARY_SCAN)
    history = split(events)
    events = list(history.live)
    paused = pauses(events)
    warnings, last_warning = _alarming(events)
    evals = {e.step: e for e in events if isinstance(e, Eval)}  # a step's latest record wins (a resumed leg)
    crash = crash_verdict(events, folder.log_file) if status is Status.FAILED else None
    skipped = check_end(events_file)
    return clean(
        {
            "ended": ended,
            "events_size": size,
            "step": last.step if last else None,
            "reward": last.get("reward") if last else None,
            "last_event_time": last_time,
            "total": run_total(state, config),
            "project": config.get("project_name"),
            "model": config.get("model"),
            "name": config.get("name"),
            "tags": config.get("tags") or [],
            "notes": config.get("notes"),
            "warnings": warnings,
            "last_warning": last_warning,
            "crash": warning_record(crash) if crash else None,
            EVAL_KEY: eval_figures(evals, ranking_metric(config.get("keep_best"), evals)),
            SKIPPED_KEY: {} if skipped is None else {EVENTS_FILE: skipped.to_record()},
            PAUSED_KEY: paused,
            REWINDS_KEY: len(history.rewinds),
            "duration": round(max(0.0, ended - started - paused), 3)
            if is_number(started) and is_number(ended)
            else None,
        }
    )


def end_summary(folder, status: Status | str, ended: float) -> dict | None:
    """The summary ``RunFolder.record_end`` stores with an end at ``ended``; None when it cannot be computed
    (a summary must never stop a run's end from being recorded)."""
    try:
        return summarize(folder, status, {**folder.read_state(), "ended": ended})
    except Exception:
        return None


def warning_record(warning: HealthWarning) -> dict:
    """A warning as stored in a summary (and in ``grpo-tui runs --json``): its fields without type and time."""
    return {k: v for k, v in warning.to_record().items() if k not in ("type", "time")}


def valid_summary(state: dict, events_size: int | None) -> dict | None:
    """The state's summary when a reader may trust it: the status is final, the summary is of this end and
    events.jsonl has the size the summary was computed from (``events_size``: its size now, None if missing)."""
    summary = state.get(SUMMARY_KEY)
    if not isinstance(summary, dict):
        return None
    status, ended = Status.parse(state.get("status")), summary.get("ended")
    if status is None or not status.is_final or ended is None or ended != state.get("ended"):
        return None
    return summary if summary.get("events_size") == (events_size or 0) else None


def summary_crash(summary: dict) -> HealthWarning | None:
    """The crash verdict a summary holds, as the warning the watcher would have made (None when none)."""
    crash = summary.get("crash")
    if not isinstance(crash, dict):
        return None
    event = decode({**crash, "type": str(EventType.WARNING)})
    return event if isinstance(event, HealthWarning) else None


def summary_skipped(summary: dict) -> dict[str, SkippedLines] | None:
    """The skipped lines a summary holds, by file (empty: none); None when it holds no check (written before
    summaries held one) or one of the wrong shape: a reader then checks the events itself."""
    record = summary.get(SKIPPED_KEY)
    if not isinstance(record, dict):
        return None
    if EVENTS_FILE not in record:
        return {}
    skipped = SkippedLines.from_record(record[EVENTS_FILE])
    return None if skipped is None else {EVENTS_FILE: skipped}
