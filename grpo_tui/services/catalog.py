"""What runs exist in a runs dir, a one-line summary of each, and which one a user means.

``grpo-tui runs``, ``logs``, ``watch`` and the app all start here. Events files grow to hundreds of
megabytes, so nothing here parses a whole one: the last metrics come from reading the file backwards in
blocks, and warnings from a byte scan that parses only the lines naming a warning, remembered per file so
a refreshing list rescans only what was appended.
"""

from __future__ import annotations

import difflib
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from trainer_core.contract.event_log import BackwardLines, parse_line, scan_events
from trainer_core.contract.events import Event, EventType, HealthWarning, Metrics
from trainer_core.contract.run_folder import RUNS_DIR_ENV, RunFolder, resolve_runs_dir
from trainer_core.contract.status import Status

from .run_health import watcher_warnings
from .run_status import live_status, run_duration, run_total

RUN_FILES = ("config.yaml", "state.json", "events.jsonl")


class UnknownRunError(LookupError):
    """A run reference that names no run, or more than one; the message says what exists."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


@dataclass
class RunInfo:
    """One run as ``grpo-tui runs`` shows it; times are unix seconds, ``duration`` is seconds."""

    run_id: str
    path: Path
    project: str | None
    model: str | None
    status: Status
    step: int | None
    total: int | None
    last_reward: float | None
    started: float | None
    ended: float | None
    duration: float | None
    warnings: int
    last_warning: str | None
    exit_reason: str | None
    alerts: list[HealthWarning] = field(default_factory=list)  # watcher-side warnings: stall, crash cause

    def to_dict(self) -> dict:
        """The row of ``grpo-tui runs --json``."""
        data = asdict(self)
        data["path"] = str(self.path)
        data["status"] = self.status.value
        data["alerts"] = [{k: v for k, v in a.to_record().items() if k not in ("type", "time")} for a in self.alerts]
        return data


_warning_cache: dict[Path, tuple[int, int, int, str | None]] = {}


def warning_summary(path: str | os.PathLike) -> tuple[int, str | None]:
    """How many ``warn``/``critical`` warnings the events file holds, and the last one's rule.

    The whole file is byte-scanned once per process; later calls scan only what was appended.
    """
    path = Path(path)
    try:
        info = path.stat()
    except OSError:
        return 0, None
    inode, offset, count, last = _warning_cache.get(path, (info.st_ino, 0, 0, None))
    if inode != info.st_ino or info.st_size < offset:
        offset, count, last = 0, 0, None
    events, offset = scan_events(path, (EventType.WARNING,), start=offset)
    for event in events:
        if isinstance(event, HealthWarning) and event.severity.alarming:
            count, last = count + 1, event.rule
    _warning_cache[path] = (info.st_ino, offset, count, last)
    return count, last


# -- runs -----------------------------------------------------------------------------------------------


def tail_events(source: str | os.PathLike | BackwardLines) -> tuple[Event | None, Metrics | None]:
    """The file's last event and its last ``metrics`` event (None when none), reading from the end."""
    lines = source if isinstance(source, BackwardLines) else BackwardLines(source)
    last_event: Event | None = None
    for line in lines:
        event = parse_line(line)
        if event is None:
            continue
        last_event = last_event or event
        if isinstance(event, Metrics):
            return last_event, event
    return last_event, None


def run_info(folder: RunFolder, now: float | None = None) -> RunInfo:
    now = time.time() if now is None else now
    state, config = folder.read_state(), folder.read_config()
    status = live_status(folder, state)
    last_event, last = tail_events(folder.events_file)
    warnings, last_warning = warning_summary(folder.events_file)
    alerts = watcher_warnings(folder, status, now, config)
    if alerts:
        warnings, last_warning = warnings + len(alerts), alerts[-1].rule
    started, ended = state.get("started"), state.get("ended")
    return RunInfo(
        run_id=folder.run_id, path=folder.path, project=config.get("project_name"), model=config.get("model"),
        status=status, step=last.step if last else None, total=run_total(state, config),
        last_reward=last.get("reward") if last else None,
        started=started, ended=ended,
        duration=run_duration(state, status, now, last_event.time if last_event else None), warnings=warnings,
        last_warning=last_warning, exit_reason=state.get("exit_reason"), alerts=alerts,
    )


def is_run_folder(path: Path) -> bool:
    return path.is_dir() and any((path / name).exists() for name in RUN_FILES)


def run_folders(runs_dir: str | os.PathLike | None = None) -> list[RunFolder]:
    """Every run folder in the runs dir, newest first (run ids sort by start time)."""
    base = resolve_runs_dir(runs_dir)
    try:
        entries = list(base.iterdir())
    except OSError:
        return []
    runs = [RunFolder(p) for p in entries if not p.name.startswith(".") and is_run_folder(p)]
    return sorted(runs, key=lambda f: f.run_id, reverse=True)


def list_runs(runs_dir: str | os.PathLike | None = None) -> list[RunInfo]:
    now = time.time()
    return [run_info(folder, now) for folder in run_folders(runs_dir)]


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
    if ref and is_run_folder(Path(ref).expanduser()):
        return RunFolder(Path(ref).expanduser())
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
