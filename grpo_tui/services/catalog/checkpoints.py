"""What the monitor's Checkpoints tab and eval panel list: the checkpoint ledger, and held-out metrics by name.

A run here has its checkpoints on disk, so its list is the ledger (``trainer_core.contract.run.ledger``:
sizes, torn ones, each checkpoint's own eval file). A run on another host is watched through a mirror of its
folder (``executors/mirror.py``) that holds no checkpoints, so its list is built from the events alone: one
entry per ``checkpoint`` event, with the held-out metrics of the ``eval`` event of its step, ranked and
marked as the ledger ranks and marks them (``abandoned`` too: run/rewinds.py); its size is unknown there. Stdlib
only, and no Textual: the screen calls ``read_checkpoints`` from a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from trainer_core.contract.run.event_log import scan_events
from trainer_core.contract.run.events import Checkpoint, Eval, Event, Rewound
from trainer_core.contract.run.ledger import (
    FINAL,
    LEDGER_SCAN,
    LedgerEntry,
    LedgerEvents,
    best_entries,
    default_metric,
    eval_of,
    known_engine,
    read_ledger,
)


@dataclass(frozen=True)
class CheckpointRow:
    """One checkpoint as listed: ``size`` in bytes, None where it is not known (a remote run's)."""

    name: str
    step: int
    size: int | None
    metrics: Mapping[str, float] = field(default_factory=dict)
    marks: tuple[str, ...] = ()
    engine: str | None = None  # what generated its eval's samples (vllm, transformers)


@dataclass(frozen=True)
class CheckpointList:
    """The rows, oldest first, the metric they are ranked by, and whether they come from the events alone."""

    rows: tuple[CheckpointRow, ...] = ()
    metric: str | None = None
    from_events: bool = False


def read_checkpoints(
    run_path: Path, from_events: bool = False, events: Iterable[Event] | None = None
) -> CheckpointList:
    """The run's checkpoints: its ledger, or (``from_events``: a mirror without checkpoints) its events' list.

    ``events``: the run's ``checkpoint``, ``eval`` and ``rewound`` events in the order they were written, when the
    caller has read them already (the monitor's stream has): the events file is then not read again."""
    events_file = Path(run_path) / "events.jsonl"
    if events is None:
        events = scan_events(events_file, LEDGER_SCAN)[0]
    events = [e for e in events if isinstance(e, (Checkpoint, Eval, Rewound))]
    history = LedgerEvents.of(events)
    evals = history.evals  # a step's latest eval wins, as in the ledger
    metric = default_metric(run_path, evals)
    if not from_events:
        entries = read_ledger(run_path, metric, evals, history)
        return CheckpointList(tuple(_row(e, e.size) for e in entries), metric)
    return CheckpointList(tuple(_row(e, None) for e in ledger_from_events(events, metric, history)), metric, True)


def _row(entry: LedgerEntry, size: int | None) -> CheckpointRow:
    return CheckpointRow(entry.name, entry.step, size, dict(entry.metrics), entry.marks, entry.engine)


def ledger_from_events(
    events: Iterable[Event], metric: str | None, history: LedgerEvents | None = None
) -> list[LedgerEntry]:
    """The ledger as the events tell it: each checkpoint event (the latest of a name winning), with the metrics
    of the eval of its step, marked best (the highest ``metric``), last (the newest saved of the live history),
    final and abandoned (``history``: what the ledger takes from the same events, when already made)."""
    events = list(events)
    history = LedgerEvents.of(events) if history is None else history
    evals: dict[int, Eval] = {}
    saved: dict[str, Checkpoint] = {}
    for event in events:
        if isinstance(event, Eval):
            evals[event.step] = event
        elif isinstance(event, Checkpoint):
            name = FINAL if event.final else PurePosixPath(str(event.path)).name or f"checkpoint-{event.step}"
            saved.pop(name, None)  # a resumed leg may save one again: it moves to its new place
            saved[name] = event
    entries = []
    for name, event in saved.items():
        found = evals.get(event.step)
        metrics = eval_of(found) if found is not None else {}
        marks = ("final",) if event.final else ("abandoned",) if event.step in history.abandoned else ()
        entries.append(
            LedgerEntry(name, Path(str(event.path)), event.step, 0, metrics, marks, engine=known_engine(found))
        )
    entries.sort(key=lambda e: (e.name == FINAL, e.step))
    best = {e.name for e in best_entries(entries, metric)} if metric else set()
    last = max((e.step for e in entries if e.name != FINAL and "abandoned" not in e.marks), default=None)
    marked = []
    for e in entries:
        marks = (
            *e.marks,
            *(("best",) if e.name in best else ()),
            *(("last",) if e.step == last and e.name != FINAL and "abandoned" not in e.marks else ()),
        )
        marked.append(LedgerEntry(e.name, e.path, e.step, e.size, e.metrics, marks, engine=e.engine))
    return marked


def metric_names(evals: Iterable[Eval]) -> list[str]:
    """Each metric the evals measured, task metrics first: its mean (``NAME``), then its other statistics but
    the spread (``NAME/pass@4``), as ``Eval.value`` and the ledger name them."""
    names: list[str] = []
    for event in evals:
        task = [t for t in event.task_metrics if isinstance(t, str)] if isinstance(event.task_metrics, list) else []
        for name in [*task, *(n for n in event.metrics if n not in task)]:
            stats = event.metrics.get(name)
            if not isinstance(name, str) or not isinstance(stats, dict):
                continue
            for stat in stats:
                key = name if stat == "mean" else f"{name}/{stat}"
                if stat != "std" and isinstance(stat, str) and key not in names and event.value(key) is not None:
                    names.append(key)
    return names


def human_size(size: int | None) -> str:
    """Bytes in the largest unit that keeps a number of at least 1 (``3.2 GiB``); ``-`` when unknown."""
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
