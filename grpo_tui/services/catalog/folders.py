"""What runs exist in a runs dir, a one-line summary of each, and which one a user means.

``grpo-tui runs``, ``logs``, ``watch`` and the app all start here. Events files grow to hundreds of
megabytes, so nothing here parses a whole one: the last metrics come from reading the file backwards in
blocks, and warnings from a byte scan that parses only the lines naming a warning, remembered per file so
a refreshing list rescans only what was appended.

The held-out evaluation's figures (``run_row.EvalFigures``) come from a byte scan that parses only the lines
naming an ``eval`` event, remembered per file like the warnings'. Lines that readers skip (not an event) are
counted in the file's last 64 KiB only (``line_check.check_end``): a whole file is never parsed for them.

A finished run is cheaper still: its state.json carries the ``summary`` written at its end
(``trainer_core.contract.run.summary``), held-out figures included, so listing it reads that one small file
and stats events.jsonl, with no YAML, no events scan and no process lookup. Runs without a valid summary (they
ended before summaries existed, or live ones) are read as above, and so are the evals of a run whose summary
was written before summaries held them (and the skipped lines of one written before summaries held those).
"""

from __future__ import annotations

import difflib
import os
import time
from pathlib import Path

from grpo_tui.services.catalog.health import watcher_warnings
from grpo_tui.services.catalog.status import live_status, run_duration, run_total
from grpo_tui.services.records.run_row import EvalFigures, labels_of
from grpo_tui.services.records.run_row import (
    RunInfo as RunInfo,  # the row type, defined once (run_row.py); imported from here too
)
from grpo_tui.services.slurm import queue as slurm_queue
from trainer_core.contract.run.event_log import scan_events, tail_events
from trainer_core.contract.run.events import Eval, EventType, HealthWarning, Rewound
from trainer_core.contract.run.folder import RUNS_DIR_ENV, RunFolder, resolve_runs_dir
from trainer_core.contract.run.json_values import number_or_none, text_or_none, whole_or_none
from trainer_core.contract.run.ledger import default_metric
from trainer_core.contract.run.line_check import EVENTS_FILE, SkippedLines, check_end
from trainer_core.contract.run.state import read_state
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import (
    EVAL_KEY,
    REWINDS_KEY,
    summary_crash,
    summary_skipped,
    valid_summary,
)

RUN_FILES = ("state.json", "config.yaml", "events.jsonl")  # any of them makes a folder a run's; state first: cheapest


class UnknownRunError(LookupError):
    """A run reference that names no run, or more than one; the message says what exists."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


_warning_cache: dict[Path, tuple[int, int, tuple[tuple[int, str], ...], int]] = {}
WARNING_SCAN = (EventType.WARNING, EventType.REWOUND)


def warning_summary(path: str | os.PathLike) -> tuple[int, str | None]:
    """How many ``warn``/``critical`` warnings the live history of the events file holds (a rewind abandons
    those past its step: run/rewinds.py), and the last one's rule.

    The whole file is byte-scanned once per process; later calls scan only what was appended.
    """
    found, _rewinds = _warnings_and_rewinds(Path(path))
    return len(found), found[-1][1] if found else None


def rewind_count(path: str | os.PathLike) -> int:
    """How many ``rewound`` events the events file holds (read with its warnings, by the same cached scan)."""
    return _warnings_and_rewinds(Path(path))[1]


def _warnings_and_rewinds(path: Path) -> tuple[tuple[tuple[int, str], ...], int]:
    """The live alarming warnings (step, rule) and the count of rewinds, scanning only what was appended."""
    try:
        info = path.stat()
    except OSError:
        return (), 0
    inode, offset, found, rewinds = _warning_cache.get(path, (info.st_ino, 0, (), 0))
    if inode != info.st_ino or info.st_size < offset:
        offset, found, rewinds = 0, (), 0
    events, offset = scan_events(path, WARNING_SCAN, start=offset)
    kept = list(found)
    for event in events:
        if isinstance(event, Rewound):
            rewinds += 1
            kept = [(step, rule) for step, rule in kept if step <= event.to_step]
        elif isinstance(event, HealthWarning) and event.severity.alarming:
            kept.append((event.step, str(event.rule)))  # a rule's plain name
    _warning_cache[path] = (info.st_ino, offset, tuple(kept), rewinds)
    return tuple(kept), rewinds


_eval_cache: dict[str, tuple[int, int, dict[int, Eval]]] = {}
EVAL_NEEDLE = f'"{EventType.EVAL}"'.encode()
REWOUND_NEEDLE = f'"{EventType.REWOUND}"'.encode()


def held_out_evals(path: str | os.PathLike) -> dict[int, Eval]:
    """The events file's evals by step (a step's latest record winning), byte-scanned once per process; later
    calls scan only what was appended. A file without evals costs one read (thousands of finished runs are
    listed this way: no Path objects, and only a file naming an eval is parsed)."""
    key = os.fspath(path)
    try:
        fd = os.open(key, os.O_RDONLY)
    except OSError:
        return {}
    try:
        info = os.fstat(fd)
        cached = _eval_cache.get(key)
        fresh = cached is None or cached[0] != info.st_ino or cached[1] > info.st_size  # new, replaced or cut
        offset, evals = (0, {}) if fresh or cached is None else (cached[1], cached[2])
        if offset == info.st_size:
            return evals
        data = os.pread(fd, info.st_size - offset, offset)
    except OSError:
        return {}
    finally:
        os.close(fd)
    end = data.rfind(b"\n") + 1
    if data.find(EVAL_NEEDLE, 0, end) >= 0 or data.find(REWOUND_NEEDLE, 0, end) >= 0:
        found, _ = scan_events(key, (EventType.EVAL, EventType.REWOUND), start=offset, end=offset + end)
        evals = dict(evals)
        for event in found:  # the live history's (run/rewinds.py): a rewind abandons the evals past its step
            if isinstance(event, Rewound):
                evals = {step: e for step, e in evals.items() if step <= event.to_step}
            elif isinstance(event, Eval):
                evals[event.step] = event
    _eval_cache[key] = (info.st_ino, offset + end, evals)
    return evals


def skipped_lines(folder: RunFolder) -> dict[str, SkippedLines]:
    """The lines at the end of the run's events.jsonl that readers skip (``line_check.check_end``: its last 64 KiB,
    never the whole of a long file), by file name; empty when there are none."""
    skipped = check_end(os.path.join(folder.path, EVENTS_FILE))
    return {} if skipped is None else {EVENTS_FILE: skipped}


def held_out(folder: RunFolder) -> EvalFigures | None:
    """The run's held-out figures of its ranking metric; None for a run without evals."""
    evals = held_out_evals(os.path.join(folder.path, "events.jsonl"))  # no Path made: thousands of runs
    return EvalFigures.of(evals, default_metric(folder.path, evals)) if evals else None


# -- runs -----------------------------------------------------------------------------------------------


def run_info(folder: RunFolder, now: float | None = None, state: dict | None = None) -> RunInfo:
    """One run's row; ``state``: its state.json when already read."""
    now = time.time() if now is None else now
    state = folder.read_state() if state is None else state
    status = live_status(folder, state)
    if status.is_final:
        summary = valid_summary(state, _size(folder.events_file))
        if summary is not None:
            return summarised_info(folder, state, status, summary, now)
    config = folder.read_config()
    last_event, last = tail_events(folder.events_file)
    warnings, last_warning = warning_summary(folder.events_file)
    alerts = watcher_warnings(folder, status, now, config)
    if alerts:
        warnings, last_warning = warnings + len(alerts), str(alerts[-1].rule)
    started, ended = state.get("started"), state.get("ended")
    queue_reason, exit_reason = None, state.get("exit_reason")
    job = slurm_queue.job_of(state)
    if job is not None and status is Status.QUEUED:
        queued = slurm_queue.queued_job(job)
        queue_reason = queued.reason if queued else None
    elif job is not None and status is Status.LOST:
        ended_as = slurm_queue.QUEUE.ended(job)
        if ended_as is not None:
            exit_reason = f"Slurm job {job} ended {ended_as.state}" + (
                f" ({ended_as.reason})" if ended_as.reason not in ("None", "") else ""
            )
    return RunInfo(
        run_id=folder.run_id,
        path=folder.path,
        project=text_or_none(config.get("project_name")),  # config.yaml may hold anything
        model=text_or_none(config.get("model")),
        status=status,
        step=last.step if last else None,
        total=run_total(state, config),
        last_reward=last.get("reward") if last else None,
        started=started,
        ended=ended,
        duration=run_duration(state, status, now, last_event.time if last_event else None),
        warnings=warnings,
        last_warning=last_warning,
        exit_reason=exit_reason,
        alerts=alerts,
        queue_reason=queue_reason,
        held_out=held_out(folder),
        skipped=skipped_lines(folder),
        rewinds=rewind_count(folder.events_file),
        **labels_of(config),
    )


def summarised_info(folder: RunFolder, state: dict, status: Status, summary: dict, now: float) -> RunInfo:
    """The row of a finished run from the summary its end stored: the same fields, from one file."""
    crash = summary_crash(summary) if status is Status.FAILED else None
    alerts = [crash] if crash else []
    warnings, last_warning = whole_or_none(summary.get("warnings")) or 0, text_or_none(summary.get("last_warning"))
    if alerts:
        warnings, last_warning = warnings + len(alerts), str(alerts[-1].rule)
    step, last_time = whole_or_none(summary.get("step")), number_or_none(summary.get("last_event_time"))
    return RunInfo(
        run_id=folder.run_id,
        path=folder.path,
        project=text_or_none(summary.get("project")),
        model=text_or_none(summary.get("model")),
        status=status,
        step=step,
        total=whole_or_none(summary.get("total")),
        last_reward=number_or_none(summary.get("reward")),
        started=state.get("started"),
        ended=state.get("ended"),
        duration=run_duration(state, status, now, last_time),
        warnings=warnings,
        last_warning=last_warning,
        exit_reason=state.get("exit_reason"),
        alerts=alerts,
        held_out=summarised_held_out(folder, summary),
        skipped=summarised_skipped(folder, summary),
        rewinds=whole_or_none(summary.get(REWINDS_KEY)) or 0,  # absent: a summary of a run from before rewinds
        # a summary written before it held the labels: config.yaml's
        **labels_of(summary if "tags" in summary else folder.read_config()),
    )


def summarised_held_out(folder: RunFolder, summary: dict) -> EvalFigures | None:
    """The held-out figures a summary stores (``eval``: None for a run without evals); the events' when it has
    none (written before summaries held them) or holds a record that is not figures."""
    if EVAL_KEY in summary:
        record = summary[EVAL_KEY]
        figures = EvalFigures.from_record(record)
        if figures is not None or record is None:
            return figures
    return held_out(folder)


def summarised_skipped(folder: RunFolder, summary: dict) -> dict[str, SkippedLines]:
    """The skipped lines a summary stores; the events' own end when it has none (written before summaries held
    them)."""
    skipped = summary_skipped(summary)
    return skipped_lines(folder) if skipped is None else skipped


def _size(path: Path) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def is_run_folder(path: Path) -> bool:
    return path.is_dir() and any(os.path.exists(os.path.join(path, name)) for name in RUN_FILES)


def folder_entries(base: Path) -> list[tuple[str, str]]:
    """(name, path) of every folder in ``base`` not starting with a dot, newest run id first: one listing."""
    try:
        with os.scandir(base) as entries:
            found = [(e.name, e.path) for e in entries if not e.name.startswith(".") and e.is_dir()]
    except OSError:
        return []
    return sorted(found, reverse=True)


def _has_run_files(path: str, names: tuple[str, ...] = RUN_FILES) -> bool:
    return any(os.path.exists(os.path.join(path, name)) for name in names)


def run_folders(runs_dir: str | os.PathLike | None = None) -> list[RunFolder]:
    """Every run folder in the runs dir, newest first (run ids sort by start time)."""
    return [RunFolder(Path(path)) for _name, path in folder_entries(resolve_runs_dir(runs_dir)) if _has_run_files(path)]


def run_states(runs_dir: str | os.PathLike | None = None) -> list[tuple[RunFolder, dict]]:
    """Every run folder with its state.json, newest first: one listing and one small read per run."""
    found = []
    for _name, path in folder_entries(resolve_runs_dir(runs_dir)):
        state = read_state(os.path.join(path, "state.json"))
        if state.missing and not _has_run_files(path, RUN_FILES[1:]):
            continue  # no state.json (yet): a run folder only if it has another run file
        found.append((RunFolder(Path(path)), state))
    return found


def list_runs(runs_dir: str | os.PathLike | None = None) -> list[RunInfo]:
    now = time.time()
    return [run_info(folder, now, state) for folder, state in run_states(runs_dir)]


def resolve_run(runs_dir: str | os.PathLike | None, ref: str) -> RunFolder:
    """A run by full id, unique id prefix, ``latest``, or path to a run folder."""
    base = resolve_runs_dir(runs_dir)
    runs = run_folders(base)
    ids = [f.run_id for f in runs]
    ref = str(ref).strip()
    if ref == "latest":
        if not runs:
            raise UnknownRunError(f"no runs in {base}{_where_hint(base)}")
        return runs[0]
    if ref in ids:
        return runs[ids.index(ref)]
    # os.path's expanduser leaves "~nobody" as it is; Path's raises for a user that does not exist
    if ref and is_run_folder(Path(os.path.expanduser(ref))):
        return RunFolder(Path(os.path.expanduser(ref)))
    matches = [f for f in runs if ref and f.run_id.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        listed = ", ".join(f.run_id for f in matches[:10]) + (", …" if len(matches) > 10 else "")
        raise UnknownRunError(f"{ref!r} matches {len(matches)} runs in {base}: {listed}; give more of the id")
    raise UnknownRunError(_unknown_message(ref, ids, base))


def _unknown_message(ref: str, ids: list[str], base: Path) -> str:
    message = f"no run {ref!r} in {base}"
    if not ids:
        return message + _where_hint(base)
    close = difflib.get_close_matches(ref, ids, n=3, cutoff=0.5)
    if close:
        return message + "; did you mean " + " or ".join(close) + "?"
    return message + f"; the newest is {ids[0]} (see grpo-tui runs)"


def _where_hint(base: Path) -> str:
    missing = "" if base.exists() else " (the folder does not exist)"
    return f"{missing}; pass --runs-dir or set ${RUNS_DIR_ENV} to where your runs are"
