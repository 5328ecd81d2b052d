"""Watcher-side health of a run: stalls, a filling disk and crash causes, which the trainer cannot report itself.

The trainer writes the metric rules' warnings into the events; this adds what only an outside view can
see — no step for too long while the process lives, its filesystem filling up, or why a run failed or
vanished — for ``runs``, ``watch`` and the app. Reads are bounded: the last metrics, the last 64 KiB of
trainer.log, and one statvfs of the run folder's filesystem per call.
"""

from __future__ import annotations

import time

from grpo_tui.services.catalog.status import remote_view
from grpo_tui.services.catalog.watch_rules import disk_space_warning, stall_warning
from trainer_core.contract.health.monitor import Thresholds
from trainer_core.contract.run.crash import killed_warning
from trainer_core.contract.run.disk import usage
from trainer_core.contract.run.event_log import BackwardLines, last_events, scan_events
from trainer_core.contract.run.events import EventType, HealthWarning, Metrics, RunFinished, decode, warning
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.json_values import is_number
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import crash_verdict

STEP_HISTORY = 21


def _thresholds(folder: RunFolder, config: dict | None) -> Thresholds:
    try:
        return Thresholds.from_mapping((folder.read_config() if config is None else config).get("health"))
    except TypeError:
        return Thresholds()


def _stamp(path) -> tuple | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


_ended_cache: dict = {}


def watcher_warnings(
    folder: RunFolder, status: Status, now: float | None = None, config: dict | None = None
) -> list[HealthWarning]:
    """Stall (live runs) or crash cause (failed or lost runs). ``config``: the run's config, when already read."""
    now = time.time() if now is None else now
    status = Status(status)
    remote = remote_view(folder)
    if remote is not None:
        return remote_alerts(remote)
    if status.is_live:
        thresholds = _thresholds(folder, config)
        recent = [
            e
            for e in last_events(BackwardLines(folder.events_file), EventType.METRICS, STEP_HISTORY)
            if isinstance(e, Metrics)
        ]
        step = recent[-1].step if recent else 0
        found = [_disk_space(folder, step, thresholds)]
        if recent:
            times = [e.time for e in recent if is_number(e.time)]
            found.insert(0, stall_warning(times, step, now, process_alive=True, thresholds=thresholds))
        return [w for w in found if w is not None]
    if status not in (Status.FAILED, Status.LOST):
        return []
    # an ended run's files rarely change, and the runs list asks every few seconds
    key = (status, _stamp(folder.events_file), _stamp(folder.log_file))
    cached = _ended_cache.get(folder.path)
    if cached is None or cached[0] != key:
        cached = _ended_cache[folder.path] = (key, _crash(folder, status))
    return cached[1]


def remote_alerts(remote: dict) -> list[HealthWarning]:
    """A mirrored run's alerts: the host's (it sees the processes and the disk), and a lost connection."""
    found = []
    for record in remote.get("alerts") or []:
        if isinstance(record, dict):
            event = decode({**record, "type": EventType.WARNING.value})
            if isinstance(event, HealthWarning):
                found.append(event)
    if not remote.get("connected") and remote.get("error"):
        updated = remote.get("updated")
        since = time.strftime(" since %H:%M:%S", time.localtime(updated)) if is_number(updated) else ""
        found.append(
            warning(
                HealthRule.CONNECTION_LOST,
                Severity.WARN,
                0,
                f"No news from host {remote.get('host')}{since}: {remote['error']}",
                {"host": remote.get("host")},
            )
        )
    return found


def _disk_space(folder: RunFolder, step: int, thresholds: Thresholds) -> HealthWarning | None:
    """One statvfs; the newest checkpoint's size only when the filesystem is already that full."""
    space = usage(folder.path)
    if space is None or space.percent_used < thresholds.disk_warn_percent:
        return None
    return disk_space_warning(space, step, thresholds, _newest_checkpoint_bytes(folder))


def _newest_checkpoint_bytes(folder: RunFolder) -> int | None:
    try:
        found = [
            p for p in folder.checkpoints_dir.iterdir() if p.name.startswith("checkpoint-") and p.name[11:].isdigit()
        ]
        newest = max(found, key=lambda p: int(p.name[11:]), default=None)
        return sum(f.stat().st_size for f in newest.iterdir() if f.is_file()) if newest else None
    except OSError:
        return None


def _crash(folder: RunFolder, status: Status) -> list[HealthWarning]:
    events, _ = scan_events(folder.events_file, (EventType.ERROR, EventType.RUN_FINISHED))
    finished = next((e for e in reversed(events) if isinstance(e, RunFinished)), None)
    crash = crash_verdict(events, folder.log_file)
    if status is Status.LOST and (crash is None or crash.rule == HealthRule.CRASH):
        space = usage(folder.path)  # a trainer that could not even write its end: the disk may be full
        if space is not None and space.nearly_full:
            crash = warning(
                HealthRule.CRASH_DISK_FULL,
                Severity.CRITICAL,
                finished.step if finished else 0,
                f"The run's processes are gone without recording an end, and the filesystem holding it "
                f"({space.mount}) is full: {space.describe()}.",
                {"status": "lost", "filesystem": space.mount, "free_bytes": space.free, "inferred": True},
            )
    if crash is None and status is Status.LOST:
        crash = killed_warning(
            finished.step if finished else 0,
            "The run's processes are gone without recording an end: a reboot, SIGKILL or the kernel's OOM killer.",
            {"status": "lost"},
        )
    return [crash] if crash else []
