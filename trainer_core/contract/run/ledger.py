"""The checkpoint ledger: every checkpoint of a run with the held-out metrics of its step, ranked.

A checkpoint's metrics are written beside its weights when it is saved (``checkpoint-N/grpo_tui_eval.json``,
the ``eval`` event of step N), so a checkpoint copied elsewhere still says how good it was; a run whose
checkpoint lacks the file (an older run, a save cut short) takes them from its events. The ledger is what
``grpo-tui checkpoints`` lists, what ``--keep-best`` keeps, and what ``--checkpoint best|final|STEP``
resolves against. Stdlib only: the app, the CLI and the trainer read it alike.

A rewind (run/rewinds.py) abandons the checkpoints an earlier leg saved past its step, but not their worth: they
stay in the ledger with their evals, marked ``abandoned``; one may still be the best, and ``--keep-best`` may keep
it. ``last``, ``final`` and the newest kept by ``save_total_limit`` are of the live history.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from trainer_core.contract.run.checkpoints import TORN_DIR, check_checkpoints, checkpoint_step
from trainer_core.contract.run.event_log import scan_events
from trainer_core.contract.run.events import EVAL_ENGINES, Eval, Event, EventType
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.json_values import is_number
from trainer_core.contract.run.ranking import KeepBest, ranking_metric
from trainer_core.contract.run.rewinds import abandoned_checkpoints, live

EVAL_FILE = "grpo_tui_eval.json"
FINAL = "final"


@dataclass(frozen=True)
class LedgerEntry:
    """One checkpoint: ``name`` (``checkpoint-N``, ``final``, or ``torn/checkpoint-N.TIME``), its step, size
    in bytes, the headline value of each held-out metric at its step, and its marks (best, last, final, torn)."""

    name: str
    path: Path
    step: int
    size: int
    metrics: dict[str, float] = field(default_factory=dict)
    marks: tuple[str, ...] = ()
    problems: str = ""
    engine: str | None = None  # what generated the samples of its eval (events.Eval.engine)

    def value(self, metric: str) -> float | None:
        return self.metrics.get(metric)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "step": self.step,
            "size": self.size,
            "metrics": self.metrics,
            "marks": list(self.marks),
            **({"problems": self.problems} if self.problems else {}),
            **({"engine": self.engine} if self.engine else {}),
        }


def folder_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).stat().st_size
            except OSError:
                pass
    return total


def eval_of(event: Eval) -> dict[str, float]:
    """The figures a ledger keeps of one eval: each metric's mean (``NAME``) and its other statistics
    (``NAME/pass@4``, ...), finite numbers only."""
    found: dict[str, float] = {}
    for name, stats in event.metrics.items():
        if not isinstance(stats, dict):
            continue
        for stat, value in stats.items():
            if not is_number(value):
                continue
            found[name if stat == "mean" else f"{name}/{stat}"] = float(value)
    return found


def write_checkpoint_eval(checkpoint: Path, event: Eval) -> None:
    """Record ``event`` (the eval of the checkpoint's step) inside the checkpoint folder."""
    (checkpoint / EVAL_FILE).write_text(json.dumps(event.to_record(), indent=2, allow_nan=False) + "\n")


def _read_checkpoint_eval(checkpoint: Path) -> Eval | None:
    try:
        record = json.loads((checkpoint / EVAL_FILE).read_text())
    except (OSError, ValueError, RecursionError):  # missing, not UTF-8, not JSON, or nested too deep: no metrics
        return None
    if not isinstance(record, dict) or not isinstance(record.get("metrics"), dict):
        return None
    return Eval(step=0, metrics=record["metrics"], engine=record.get("engine"))


def known_engine(event: Eval | None) -> str | None:
    """The eval's engine when it is one grpo-tui writes; anything else in a run folder (a hand edit) is no engine."""
    engine = None if event is None else event.engine
    return engine if engine in EVAL_ENGINES else None


def evals_by_step(events_file: Path) -> dict[int, Eval]:
    """The run's evals by step, the latest record of a step winning (a resumed leg may repeat one). Only the lines
    naming an eval are parsed, so a long run's metrics cost a read of the file, not a decode of each line."""
    found, _ = scan_events(events_file, (EventType.EVAL,))
    return {e.step: e for e in found if isinstance(e, Eval)}


LEDGER_SCAN = (EventType.EVAL, EventType.CHECKPOINT, EventType.REWOUND)


@dataclass(frozen=True)
class LedgerEvents:
    """What the ledger takes from a run's events: each step's latest eval (an abandoned checkpoint keeps the eval
    of its step), the evals of the live history, and the steps of the abandoned checkpoints."""

    evals: dict[int, Eval] = field(default_factory=dict)
    live_evals: dict[int, Eval] = field(default_factory=dict)
    abandoned: frozenset[int] = frozenset()

    @classmethod
    def of(cls, events: Iterable[Event]) -> LedgerEvents:
        """From a run's ``eval``, ``checkpoint`` and ``rewound`` events, in the order they were written."""
        events = list(events)
        return cls(
            {e.step: e for e in events if isinstance(e, Eval)},
            {e.step: e for e in live(events) if isinstance(e, Eval)},
            frozenset(abandoned_checkpoints(events)),
        )

    @classmethod
    def read(cls, events_file: Path) -> LedgerEvents:
        """From the run's events.jsonl (only the lines naming those types are parsed)."""
        return cls.of(scan_events(events_file, LEDGER_SCAN)[0])


def _rank_key(metric: str):
    def key(entry: LedgerEntry):
        value = entry.value(metric)
        return (value is not None, value if value is not None else -math.inf, entry.step)

    return key


def best_entries(entries: Iterable[LedgerEntry], metric: str, count: int = 1) -> list[LedgerEntry]:
    """The ``count`` complete checkpoints with the highest ``metric`` (the later one first on a tie)."""
    scored = [e for e in entries if e.value(metric) is not None and "torn" not in e.marks]
    return sorted(scored, key=_rank_key(metric), reverse=True)[:count]


def read_ledger(
    run_path: Path, metric: str | None = None, evals: dict[int, Eval] | None = None, history: LedgerEvents | None = None
) -> list[LedgerEntry]:
    """Every checkpoint of the run at ``run_path``, oldest first, then ``final`` and the torn ones.

    ``metric`` picks the best (the highest value); without it, the run's ``keep_best`` metric, else its first
    task metric, else the held-out ``reward``. ``history``: what the ledger takes from the run's events, when the
    caller has read them (else they are read); ``evals``: the run's evals by step, in place of its own."""
    run_path = Path(run_path)
    history = LedgerEvents.read(run_path / "events.jsonl") if history is None else history
    evals = history.evals if evals is None else evals
    metric = metric or default_metric(run_path, evals)
    entries: list[LedgerEntry] = []
    checkpoints = run_path / "checkpoints"
    for check in check_checkpoints(checkpoints):
        event = _read_checkpoint_eval(check.path) or evals.get(check.step)
        metrics = eval_of(event) if event is not None else None
        marks = () if check.complete else ("torn",)
        if check.step in history.abandoned:
            marks = (*marks, "abandoned")
        entries.append(
            LedgerEntry(
                check.name,
                check.path,
                check.step,
                folder_size(check.path),
                metrics or {},
                marks,
                "" if check.complete else check.why(),
                known_engine(event),
            )
        )
    torn_dir = checkpoints / TORN_DIR
    torn = sorted(p for p in torn_dir.iterdir() if p.is_dir()) if torn_dir.is_dir() else []
    complete = [e for e in entries if "torn" not in e.marks and "abandoned" not in e.marks]
    last = complete[-1].step if complete else None
    final = run_path / FINAL
    if (final / "config.json").exists() or (final / "adapter_config.json").exists():
        live_evals = {s: e for s, e in evals.items() if s in history.live_evals}  # the live history's
        step = max(live_evals, default=last or 0) if last is None else max(last, max(live_evals, default=0))
        event = live_evals.get(step)
        metrics = eval_of(event) if event is not None else {}
        entries.append(
            LedgerEntry(FINAL, final, step, folder_size(final), metrics, ("final",), engine=known_engine(event))
        )
    best = {e.name for e in best_entries(entries, metric)} if metric else set()
    marked = []
    for entry in entries:
        marks = list(entry.marks)
        if entry.name in best:
            marks.append("best")
        if entry.step == last and entry.name != FINAL and "torn" not in marks and "abandoned" not in marks:
            marks.append("last")
        marked.append(
            LedgerEntry(
                entry.name,
                entry.path,
                entry.step,
                entry.size,
                entry.metrics,
                tuple(marks),
                entry.problems,
                entry.engine,
            )
        )
    for path in torn:
        step = checkpoint_step(Path(path.name.split(".")[0])) or 0
        metrics = eval_of(evals[step]) if step in evals else {}
        marked.append(LedgerEntry(f"{TORN_DIR}/{path.name}", path, step, folder_size(path), metrics, ("torn",)))
    return marked


def default_metric(run_path: Path, evals: dict[int, Eval] | None = None) -> str | None:
    """The metric the run at ``run_path`` is ranked by (run/ranking.py), from its config and its evals."""
    try:
        keep_best = RunFolder(Path(run_path)).read_config().get("keep_best")
    except (ValueError, OSError):
        keep_best = None
    evals = evals_by_step(Path(run_path) / "events.jsonl") if evals is None else evals
    return ranking_metric(keep_best, evals)


def kept(entries: list[LedgerEntry], last: int | None, keep: KeepBest | None) -> set[str]:
    """The names of the checkpoints to keep: the ``last`` newest of the live history (all with None) and the
    ``keep.count`` best (abandoned ones too)."""
    saved = [e for e in entries if e.name.startswith("checkpoint-")]
    alive = [e for e in saved if "abandoned" not in e.marks]
    names = {e.name for e in (saved if last is None else alive[-last:] if last > 0 else [])}
    if keep is not None:
        names |= {e.name for e in best_entries(saved, keep.metric, keep.count)}
    return names


def resolve_checkpoint(run_path: Path, which: str) -> LedgerEntry:
    """``best``, ``final``, ``last`` or a step number, as a ledger entry; ValueError names what there is."""
    entries = [e for e in read_ledger(Path(run_path)) if "torn" not in e.marks]
    names = ", ".join(e.name for e in entries) or "none"
    if which in ("best", "final", "last"):
        found = next((e for e in entries if which in e.marks), None)
        if found is None:
            why = " (no checkpoint has a held-out metric)" if which == "best" else ""
            raise ValueError(f"run {Path(run_path).name} has no {which} checkpoint{why}; it has: {names}.")
        return found
    if not which.isdigit():
        raise ValueError(f"--checkpoint takes best, final, last or a step number, got {which!r}.")
    found = next((e for e in entries if e.step == int(which) and e.name != FINAL), None)
    if found is None:
        raise ValueError(f"run {Path(run_path).name} has no complete checkpoint at step {which}; it has: {names}.")
    return found
