"""Why a failed run failed, from its error events and the end of its log: the ``crash_*`` warnings.

A process killed by the kernel writes nothing, so this is judged from the outside, over the run folder, by
whoever reads it: the run's end summary (``summary.py``), the notifier and the watchers. It is part of the
run domain because a finished run's summary records its verdict.
"""

from __future__ import annotations

import errno
import re

from trainer_core.contract.run.disk import DISK_ERRNOS, DISK_KINDS, FULL_KINDS
from trainer_core.contract.run.events import Error, ErrorKind, HealthWarning, RunFinished, warning
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

DISK_ERRNO_NAMES = frozenset(errno.errorcode[n] for n in DISK_ERRNOS)

# the crash rules a line of the log (or of an error) gives away, in the order they are tried; the advice is the rule's
CRASH_PATTERNS = [
    (
        HealthRule.CRASH_OOM,
        re.compile(r"CUDA out of memory|OutOfMemoryError|torch\.OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED"),
        "The GPU ran out of memory.",
    ),
    (
        HealthRule.CRASH_NAN_PROBABILITIES,
        re.compile(r"probability tensor contains either `inf`, `nan` or element < 0"),
        "Sampling failed: the model's probabilities contain NaN or inf, so the weights have diverged.",
    ),
    (
        HealthRule.CRASH_NCCL_TIMEOUT,
        re.compile(r"Watchdog caught collective operation timeout|NCCL.*[Tt]imeout|ProcessGroupNCCL.*timed out"),
        "A collective operation between training processes timed out: one rank stopped answering.",
    ),
    (
        HealthRule.CRASH_DISK_FULL,
        re.compile(r"No space left on device|Disk quota exceeded|\[Errno (28|122)\]|StorageFull"),
        "A write failed: the filesystem holding the run folder is full (or over quota).",
    ),
    (
        HealthRule.CRASH_DISK_ERROR,
        re.compile(r"Read-only file system|\[Errno 30\]"),
        "A write failed: the filesystem holding the run folder is read-only.",
    ),
]


def classify_crash(log_tail: str, error_events: list[Error], finished: RunFinished | None) -> HealthWarning | None:
    """Why a failed run failed, from its error events and the end of its log."""
    step = (finished.step if finished else 0) or (error_events[-1].step if error_events else 0) or 0
    text = log_tail + "\n" + "\n".join(e.message + "\n" + (e.traceback or "") for e in error_events)
    disk = disk_crash(error_events, step)
    if disk is not None:
        return disk
    for rule, pattern, message in CRASH_PATTERNS:
        match = pattern.search(text)
        if match:
            line = next((ln for ln in text.splitlines() if pattern.search(ln)), match.group(0))
            return warning(rule, Severity.CRITICAL, step, message, {"log_line": line.strip()[:300]})
    env_errors = [e for e in error_events if e.kind == ErrorKind.ENVIRONMENT]
    if env_errors:
        error = env_errors[-1]
        return warning(
            HealthRule.CRASH_ENVIRONMENT,
            Severity.CRITICAL,
            step,
            f"The environment raised: {_first_line(error.message)}",
            {"case": error.case},
        )
    killed = [e for e in error_events if "killed by" in (e.message or "")]
    if killed:
        return killed_warning(step, killed[-1].message, {"message": killed[-1].message})
    if error_events:
        return warning(HealthRule.CRASH, Severity.CRITICAL, step, _first_line(error_events[-1].message))
    return None


def killed_warning(step: int, message: str, evidence: dict) -> HealthWarning:
    """``crash_killed``: the trainer died by a signal (its error says so), or a run's processes are gone without
    recording an end (the watcher sees it ``lost``)."""
    return warning(HealthRule.CRASH_KILLED, Severity.CRITICAL, step, message, evidence)


def disk_crash(error_events: list[Error], step: int) -> HealthWarning | None:
    """``crash_disk_full`` (no space, or over quota) or ``crash_disk_error`` (read-only, I/O error) from an error
    whose kind names the disk fault (run/disk.py); its evidence holds the path, the free space and the checkpoint."""
    disk_errors = [e for e in error_events if e.kind in DISK_KINDS or str(e.extra.get("errno", "")) in DISK_ERRNO_NAMES]
    if not disk_errors:
        return None
    error = disk_errors[-1]
    kind = error.kind if error.kind in DISK_KINDS else ErrorKind.DISK_FULL
    rule = HealthRule.CRASH_DISK_FULL if kind in FULL_KINDS else HealthRule.CRASH_DISK_ERROR
    evidence = {
        k: error.extra[k] for k in ("errno", "path", "filesystem", "free_bytes", "last_checkpoint") if k in error.extra
    }
    return warning(rule, Severity.CRITICAL, step, _first_line(error.message), {"kind": str(kind), **evidence})


def _first_line(text: str | None) -> str:
    lines = (text or "").splitlines()
    return lines[0] if lines else ""
