"""What runs exist in a runs dir, how each one stands, and which one a user means.

``grpo-tui runs``, ``logs``, ``watch`` and the app all start here. A run's status comes from state.json,
but a state that says it is still going is believed only while its process is alive *and* is the same
process (pid plus start time): otherwise the trainer died without writing its end and the run reads as
``lost``. Events files grow to hundreds of megabytes, so nothing here parses a whole one: the last metrics
come from reading the file backwards in blocks, and warnings from a byte scan that parses only the lines
naming a warning, remembered per file so a refreshing list rescans only what was appended.
"""

from __future__ import annotations

import difflib
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.table import Table
from rich.text import Text

from trainer_core.events import BackwardLines, parse_line, scan_events
from trainer_core.run_folder import FINAL_STATUSES, RUNS_DIR_ENV, RunFolder, process_matches, resolve_runs_dir

LIVE_STATUSES = ("starting", "running", "stopping")
RESUMABLE_STATUSES = ("stopped", "failed", "lost")
STARTING_GRACE_S = 10.0
RUN_FILES = ("config.yaml", "state.json", "events.jsonl")
STATUS_STYLES = {
    "starting": "green", "running": "bold green", "stopping": "yellow", "completed": "blue",
    "stopped": "yellow", "failed": "bold red", "lost": "magenta",
}
SEVERITY_STYLES = {"critical": "bold red", "warn": "yellow", "info": "cyan"}  # warnings and flags in plain output


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
    status: str
    step: int | None
    total: int | None
    last_reward: float | None
    started: float | None
    ended: float | None
    duration: float | None
    warnings: int
    last_warning: str | None
    exit_reason: str | None
    alerts: list[dict] = field(default_factory=list)  # watcher-side warnings: stall, crash cause

    def to_dict(self) -> dict:
        data = asdict(self)
        data["path"] = str(self.path)
        return data


# -- status ---------------------------------------------------------------------------------------------


def is_live(status: str) -> bool:
    return status in LIVE_STATUSES


def live_status(folder: RunFolder, state: dict | None = None) -> str:
    """The status to show: a final status as written, a live one only while its process is the run's."""
    state = folder.read_state() if state is None else state
    status = state.get("status")
    if status in FINAL_STATUSES:
        return status
    if process_matches(state.get("root_pid"), state.get("root_start_time")) or process_matches(
        state.get("pid"), state.get("pid_start_time")
    ):
        return status if status in LIVE_STATUSES else "starting"
    if status is None and _age(folder.path) < STARTING_GRACE_S:
        # the launcher has made the folder but the trainer has not written its state yet
        return "starting"
    return "lost"


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return float("inf")


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
    events, offset = scan_events(path, ("warning",), start=offset)
    for event in events:
        if event.get("severity") in ("warn", "critical"):
            count, last = count + 1, event.get("rule")
    _warning_cache[path] = (info.st_ino, offset, count, last)
    return count, last


# -- runs -----------------------------------------------------------------------------------------------


def read_config(folder: RunFolder) -> dict:
    try:
        import yaml

        data = yaml.safe_load(folder.config_file.read_text())
    except Exception:  # missing, unreadable or not YAML: the run still lists
        return {}
    return data if isinstance(data, dict) else {}


def _positive(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def run_total(state: dict, config: dict) -> int | None:
    """Steps the run will take: the trainer's count once known, else the configured max_steps."""
    return _positive(state.get("max_steps")) or _positive(config.get("max_steps"))


def tail_events(source: str | os.PathLike | BackwardLines) -> tuple[dict, dict]:
    """The file's last event and its last ``metrics`` event (``{}`` when none), reading from the end."""
    lines = source if isinstance(source, BackwardLines) else BackwardLines(source)
    last_event: dict = {}
    for line in lines:
        event = parse_line(line)
        if event is None:
            continue
        last_event = last_event or event
        if event.get("type") == "metrics":
            return last_event, event
    return last_event, {}


def run_info(folder: RunFolder, now: float | None = None) -> RunInfo:
    now = time.time() if now is None else now
    state, config = folder.read_state(), read_config(folder)
    status = live_status(folder, state)
    last_event, last = tail_events(folder.events_file)
    warnings, last_warning = warning_summary(folder.events_file)
    from .run_health import watcher_warnings

    alerts = [w.to_event() for w in watcher_warnings(folder, status, now, config)]
    if alerts:
        warnings, last_warning = warnings + len(alerts), alerts[-1]["rule"]
    started, ended = state.get("started"), state.get("ended")
    return RunInfo(
        run_id=folder.run_id, path=folder.path, project=config.get("project_name"), model=config.get("model"),
        status=status, step=last.get("step"), total=run_total(state, config), last_reward=last.get("reward"),
        started=started, ended=ended,
        duration=run_duration(state, status, now, last_event), warnings=warnings,
        last_warning=last_warning, exit_reason=state.get("exit_reason"), alerts=alerts,
    )


def run_duration(state: dict, status: str, now: float | None = None, last_event: dict | None = None) -> float | None:
    """How long the run has run: to its end, to now while it lives, to its last sign of life when lost."""
    started, ended = state.get("started"), state.get("ended")
    now = time.time() if now is None else now
    if not isinstance(started, (int, float)):
        return None
    if isinstance(ended, (int, float)):
        return max(0.0, ended - started)
    if is_live(status):
        return max(0.0, now - started)
    # lost: the last sign of life is the newest of the state's update and the last event
    times = [t for t in (state.get("updated"), (last_event or {}).get("time")) if isinstance(t, (int, float))]
    return max(0.0, max(times) - started) if times else None


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


# -- table ----------------------------------------------------------------------------------------------


def short_model(model: str | None, width: int = 32) -> str:
    """A model path or hub id as its last component, cut to ``width``."""
    if not model:
        return "-"
    name = str(model).rstrip("/").rsplit("/", 1)[-1] or str(model)
    return name if len(name) <= width else name[: width - 1] + "…"


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def format_time(stamp: float | None, now: float | None = None) -> str:
    """Local time, as ``ls -l`` does: month, day and time this year, the date alone before."""
    if stamp is None:
        return "-"
    local = time.localtime(stamp)
    this_year = local.tm_year == time.localtime(now).tm_year
    return time.strftime("%m-%d %H:%M" if this_year else "%Y-%m-%d", local)


def format_steps(step: int | None, total: int | None) -> str:
    if step is None:
        return f"-/{total}" if total else "-"
    return f"{step}/{total}" if total else str(step)


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLES.get(status, ""))


def format_table(runs: list[RunInfo]) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False, collapse_padding=True)
    for name in ("id", "project", "model", "status", "step", "reward", "warnings", "started", "duration"):
        # only the free-text columns give way on a narrow terminal, cut short rather than wrapped
        shrinks = name in ("project", "model", "warnings")
        table.add_column(name, justify="right" if name in ("step", "reward", "duration") else "left",
                         no_wrap=not shrinks, overflow="ellipsis", min_width=4 if shrinks else None)
    for run in runs:
        reward = "-" if run.last_reward is None else f"{run.last_reward:.3f}"
        warnings = Text(f"{run.warnings} ({run.last_warning})" if run.warnings else "0",
                        style="yellow" if run.warnings else "dim", no_wrap=True, overflow="ellipsis")
        table.add_row(Text(run.run_id), Text(run.project or "-"), Text(short_model(run.model)),
                      status_text(run.status), format_steps(run.step, run.total), reward, warnings,
                      format_time(run.started), format_duration(run.duration))
    return table
