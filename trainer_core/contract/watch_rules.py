"""Health rules only a watcher can judge: a stalled trainer, and why a run crashed.

A hung process cannot report its own hang, and a process killed by the kernel writes nothing, so these
run on the viewing side (``grpo-tui runs``/``watch``, the app) over the run folder: the metrics
timestamps, whether the process is alive, the error events and the end of trainer.log.
"""

from __future__ import annotations

import errno
import re
from statistics import median

from .disk import DISK_ERRNOS, DISK_KINDS, FULL_KINDS, Usage, human
from .events import Error, HealthWarning, RunFinished
from .health import ADVICE, Thresholds
from .severity import Severity

DISK_ERRNO_NAMES = frozenset(errno.errorcode[n] for n in DISK_ERRNOS)

CRASH_PATTERNS = [
    ("crash_oom", re.compile(r"CUDA out of memory|OutOfMemoryError|torch\.OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED"),
     "The GPU ran out of memory.",
     "Lower --rl-num-generations or --batch-size (raise --gradient-accumulation to keep the batch), turn on "
     "--gradient-checkpointing, use --peft, or lower --vllm-gpu-memory-utilization."),
    ("crash_nan_probabilities", re.compile(r"probability tensor contains either `inf`, `nan` or element < 0"),
     "Sampling failed: the model's probabilities contain NaN or inf, so the weights have diverged.",
     "Lower --lr, try --mixed-precision no (or bf16 instead of fp16), raise --rl-kl-coef, and resume from an "
     "earlier checkpoint."),
    ("crash_nccl_timeout", re.compile(r"Watchdog caught collective operation timeout|NCCL.*[Tt]imeout|ProcessGroupNCCL.*timed out"),
     "A collective operation between training processes timed out: one rank stopped answering.",
     "Look for the rank that failed first in trainer.log (often out of memory or an exception in the environment); "
     "a long single-rank step such as reward scoring can also exceed the timeout (raise it with "
     "--grpo-arg ddp_timeout=3600)."),
    ("crash_disk_full", re.compile(r"No space left on device|Disk quota exceeded|\[Errno (28|122)\]|StorageFull"),
     "A write failed: the filesystem holding the run folder is full (or over quota).", ADVICE["crash_disk_full"]),
    ("crash_disk_error", re.compile(r"Read-only file system|\[Errno 30\]"),
     "A write failed: the filesystem holding the run folder is read-only.", ADVICE["crash_disk_error"]),
]


def stall_warning(step_times: list[float], last_step: int, now: float, process_alive: bool,
                  thresholds: Thresholds | None = None) -> HealthWarning | None:
    """``stall`` when no step has landed for k x the median step time while the trainer is alive."""
    t = thresholds or Thresholds()
    if not process_alive or len(step_times) < 3:
        return None
    deltas = [b - a for a, b in zip(step_times, step_times[1:]) if b >= a]
    typical = median(deltas[-20:]) if deltas else 0.0
    limit = max(t.stall_factor * typical, t.stall_min_seconds)
    waited = now - step_times[-1]
    if waited <= limit:
        return None
    severity = Severity.CRITICAL if waited > 3 * limit else Severity.WARN
    return HealthWarning(
        "stall", severity, last_step,
        f"No new step for {waited:.0f}s after step {last_step}; a step usually takes {typical:.1f}s.",
        "Check trainer.log and the GPU panel: a hung reward function or tool call, a deadlocked collective, or a "
        "stopped process (SIGSTOP) look like this. py-spy dump --pid PID shows where it is stuck.",
        {"seconds_since_last_step": round(waited, 1), "median_step_seconds": round(typical, 3), "limit_seconds": round(limit, 1)},
    )


def disk_space_warning(space: Usage | None, last_step: int, thresholds: Thresholds | None = None,
                       checkpoint_bytes: int | None = None) -> HealthWarning | None:
    """``disk_space`` when the filesystem holding a live run passes ``disk_warn_percent`` (critical at
    ``disk_critical_percent``) used: the run fails at the first write that does not fit."""
    t = thresholds or Thresholds()
    if space is None or space.percent_used < t.disk_warn_percent:
        return None
    severity = Severity.CRITICAL if space.percent_used >= t.disk_critical_percent else Severity.WARN
    fits = ""
    if checkpoint_bytes:
        fits = f"; a checkpoint of this run takes {human(checkpoint_bytes)}"
        if checkpoint_bytes > space.free:
            fits += ", so the next one does not fit"
    return HealthWarning(
        "disk_space", severity, last_step,
        f"The filesystem holding the run folder ({space.mount}) is {space.percent_used:.0f} % full: "
        f"{human(space.free)} free of {human(space.total)}{fits}.",
        ADVICE["disk_space"],
        {"filesystem": space.mount, "percent_used": round(space.percent_used, 1), "free_bytes": space.free,
         "total_bytes": space.total, "checkpoint_bytes": checkpoint_bytes,
         "threshold_percent": t.disk_critical_percent if severity is Severity.CRITICAL else t.disk_warn_percent},
    )


def classify_crash(log_tail: str, error_events: list[Error], finished: RunFinished | None) -> HealthWarning | None:
    """Why a failed run failed, from its error events and the end of its log."""
    step = (finished.step if finished else 0) or (error_events[-1].step if error_events else 0) or 0
    text = log_tail + "\n" + "\n".join(e.message + "\n" + (e.traceback or "") for e in error_events)
    disk = disk_crash(error_events, step)
    if disk is not None:
        return disk
    for rule, pattern, message, advice in CRASH_PATTERNS:
        match = pattern.search(text)
        if match:
            line = next((ln for ln in text.splitlines() if pattern.search(ln)), match.group(0))
            return HealthWarning(rule, Severity.CRITICAL, step, message, advice, {"log_line": line.strip()[:300]})
    env_errors = [e for e in error_events if e.kind == "environment"]
    if env_errors:
        error = env_errors[-1]
        return HealthWarning(
            "crash_environment", Severity.CRITICAL, step, f"The environment raised: {_first_line(error.message)}",
            "Fix the environment for this case (its traceback and columns are in the error), then resume or restart.",
            {"case": error.case},
        )
    killed = [e for e in error_events if "killed by" in (e.message or "")]
    if killed:
        return HealthWarning(
            "crash_killed", Severity.CRITICAL, step, killed[-1].message,
            "SIGKILL with no message usually means the kernel's out-of-memory killer: check `dmesg`, lower host memory "
            "use (smaller --batch-size, fewer dataloader workers), or find who sent the signal.",
            {"message": killed[-1].message},
        )
    if error_events:
        return HealthWarning("crash", Severity.CRITICAL, step, _first_line(error_events[-1].message),
                             "Read the traceback in the error event and trainer.log.", {})
    return None


def disk_crash(error_events: list[Error], step: int) -> HealthWarning | None:
    """``crash_disk_full`` (no space, or over quota) or ``crash_disk_error`` (read-only, I/O error) from an error
    whose kind names the disk fault (disk.py); its evidence holds the path, the free space and the checkpoint."""
    disk_errors = [e for e in error_events if e.kind in DISK_KINDS or str(e.extra.get("errno", "")) in DISK_ERRNO_NAMES]
    if not disk_errors:
        return None
    error = disk_errors[-1]
    kind = error.kind if error.kind in DISK_KINDS else "disk_full"
    rule = "crash_disk_full" if kind in FULL_KINDS else "crash_disk_error"
    evidence = {k: error.extra[k] for k in ("errno", "path", "filesystem", "free_bytes", "last_checkpoint") if k in error.extra}
    return HealthWarning(rule, Severity.CRITICAL, step, _first_line(error.message), ADVICE[rule], {"kind": kind, **evidence})


def _first_line(text: str | None) -> str:
    lines = (text or "").splitlines()
    return lines[0] if lines else ""
