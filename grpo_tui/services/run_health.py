"""Watcher-side health of a run: stalls and crash causes, which the trainer cannot report itself.

The trainer writes the metric rules' warnings into the events; this adds what only an outside view can
see — no step for too long while the process lives, or why a run failed or vanished — for ``runs``,
``watch`` and the app. Reads are bounded: the last metrics and the last 64 KiB of trainer.log.
"""

from __future__ import annotations

import time

from trainer_core.health import HealthWarning, Thresholds
from trainer_core.run_folder import RunFolder
from trainer_core.watch_rules import classify_crash, stall_warning

from .registry import LIVE_STATUSES, BackwardLines, last_events, scan_events

LOG_TAIL_BYTES = 64 * 1024
STEP_HISTORY = 21


def log_tail(folder: RunFolder, size: int = LOG_TAIL_BYTES) -> str:
    try:
        with open(folder.log_file, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - size))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _thresholds(folder: RunFolder) -> Thresholds:
    from .registry import read_config

    try:
        return Thresholds.from_mapping(read_config(folder).get("health"))
    except TypeError:
        return Thresholds()


def watcher_warnings(folder: RunFolder, status: str, now: float | None = None) -> list[HealthWarning]:
    now = time.time() if now is None else now
    if status in LIVE_STATUSES:
        recent = last_events(BackwardLines(folder.events_file), "metrics", STEP_HISTORY)
        if not recent:
            return []
        times = [e["time"] for e in recent if isinstance(e.get("time"), (int, float))]
        stall = stall_warning(times, recent[-1].get("step", 0), now, process_alive=True, thresholds=_thresholds(folder))
        return [stall] if stall else []
    if status not in ("failed", "lost"):
        return []
    events, _ = scan_events(folder.events_file, ("error", "run_finished"))
    errors = [e for e in events if e.get("type") == "error"]
    finished = next((e for e in reversed(events) if e.get("type") == "run_finished"), None)
    crash = classify_crash(log_tail(folder), errors, finished)
    if crash is None and status == "lost":
        crash = HealthWarning(
            "crash_killed", "critical", (finished or {}).get("step") or 0,
            "The run's processes are gone without recording an end: a reboot, SIGKILL or the kernel's OOM killer.",
            "Check `dmesg` for the OOM killer and trainer.log for the last lines; resume from the last checkpoint.",
            {"status": "lost"},
        )
    return [crash] if crash else []
