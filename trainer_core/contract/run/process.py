"""Finding and ending every process of a run, and never one that is not.

A run is a tree: the root process, ``accelerate launch`` and its ranks, a vLLM server, anything the user's
environment started — some of it possibly in a session of its own, or re-parented to init after its
parent died. Every process a run starts carries ``GRPO_TUI_RUN_DIR`` in its environment, so the tree is
collected from the recorded pids (checked against their start times: pids are reused) *and* from that
marker, before any signal is sent. psutil re-checks each process's identity before signalling it.

A recorded pid and start time are not enough to make a process the run's: state.json is a file, and one
planted or copied from elsewhere could name any process of the user's with its true start time. A recorded
root is signalled only if it also carries the marker naming *this* run folder (``owned``); a process whose
environment cannot be read (another user's) or whose marker names another folder is refused, and the
refusal says why.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil

RUN_MARKER = "GRPO_TUI_RUN_DIR"


def process_start_time(pid: int) -> float | None:
    """The process's start time (seconds since the epoch) or None when it does not exist."""
    try:
        return round(psutil.Process(pid).create_time(), 2)
    except Exception:  # NoSuchProcess, AccessDenied, ZombieProcess
        return None


def process_matches(pid: int | None, start_time: float | None) -> bool:
    """True only if ``pid`` is alive *and* is the same process that was recorded (start time matches)."""
    return verified(pid, start_time) is not None


def run_env(run_dir: Path, extra: dict | None = None) -> dict:
    """The environment of every process a run starts: this one's, plus the marker that finds them all later."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env[RUN_MARKER] = str(Path(run_dir).resolve())
    env.update(extra or {})
    return env


def spawn_logged(
    cmd: list[str], log: Path, env: dict, *, new_session: bool = False, own_group: bool = False
) -> subprocess.Popen:
    """Start ``cmd`` with stdin from /dev/null and its output appended to ``log`` (a file, never a pipe:
    a child never blocks on a full pipe or dies with whoever read it). ``new_session``: in a session of its own;
    ``own_group``: in a process group of its own, in this session (``detached_group``)."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=new_session,
            close_fds=True,
            **(detached_group() if own_group else {}),
        )
    finally:
        os.close(fd)


def detached_group() -> dict:
    """Popen's arguments for a child in a process group of its own, in this session: what a run's root needs to
    outlive its terminal (a hangup or a Ctrl-C reaches the terminal's foreground group, never this one; the root
    ignores SIGHUP too) without a session of its own. Linux schedules each session as one group of its own
    (autogroup, on by default): a run in a new session shares the CPUs with the rest of the machine as one task,
    and with torch's threads on every core any other busy process then stalls its OpenMP barriers by whole time
    slices (25 times slower beside one CPU hog on 2 cores, where a plain TRL script loses 4 times). In the
    launcher's session the run is scheduled as a script started there would be."""
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": os.setpgrp}  # Python 3.10: no process_group argument


def verified(pid: int | None, start_time: float | None) -> psutil.Process | None:
    """The process ``pid`` if it is alive and started at ``start_time``; otherwise None."""
    if not pid or start_time is None:
        return None
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - start_time) >= 1.0 or proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


@dataclass(frozen=True)
class Refusal:
    """A recorded process that is alive and started when recorded, but is not the run's: it is never signalled."""

    pid: int
    role: str  # which record named it: "root_pid", "pid"
    reason: str

    def describe(self) -> str:
        return f"Process {self.pid} (state.json's {self.role}) was not signalled: {self.reason}."


def foreign_reason(proc: psutil.Process, run_dir: Path) -> str | None:
    """None when ``proc`` carries the marker naming ``run_dir``; otherwise why it is not the run's."""
    target = str(Path(run_dir).resolve())
    try:
        value = proc.environ().get(RUN_MARKER)
    except psutil.AccessDenied:
        return (
            f"its environment cannot be read (another user's process?), so it does not carry the run's marker "
            f"{RUN_MARKER}"
        )
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return "it has exited"
    except OSError as exc:
        return f"its environment cannot be read ({exc.strerror or exc}), so it does not carry the run's marker {RUN_MARKER}"
    if value is None:
        return f"it does not carry the run's marker ({RUN_MARKER} is not in its environment)"
    if value != target:
        return f"its marker {RUN_MARKER} names another run folder ({value}), not {target}"
    return None


def owned(
    pid: int | None, start_time: float | None, run_dir: Path, role: str = "pid"
) -> tuple[psutil.Process | None, Refusal | None]:
    """The recorded process if it is the run's (alive, started at ``start_time``, marked for ``run_dir``).

    ``(None, None)`` when it is gone or its pid was reused; ``(None, Refusal)`` when it is alive and started at
    the recorded time but does not carry this run's marker."""
    proc = verified(pid, start_time)
    if proc is None:
        return None, None
    reason = foreign_reason(proc, run_dir)
    if reason is None:
        return proc, None
    if verified(pid, start_time) is None:  # it exited while we looked: nothing to refuse
        return None, None
    return None, Refusal(proc.pid, role, reason)


def marked(run_dir: Path) -> list[psutil.Process]:
    """Processes whose environment names this run folder."""
    target = str(Path(run_dir).resolve())
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == me:
            continue
        try:
            if proc.environ().get(RUN_MARKER) == target:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return found


def collect(run_dir: Path, roots: list[psutil.Process]) -> list[psutil.Process]:
    """Roots, all their descendants, and every marked process: the run, as it is right now."""
    seen: dict[int, psutil.Process] = {}
    for proc in [*roots, *marked(run_dir)]:
        for p in [proc, *_children(proc)]:
            if p.pid != os.getpid():
                seen.setdefault(p.pid, p)
    return list(seen.values())


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children(recursive=True)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return out


def signal_all(procs: list[psutil.Process], sig: int) -> None:
    """Signal each process and each process group they lead (psutil refuses a reused pid)."""
    own_group = os.getpgrp()
    for p in procs:
        try:
            p.send_signal(sig)
            if os.getpgid(p.pid) == p.pid and p.pid != own_group:
                os.killpg(p.pid, sig)
        except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError, PermissionError):
            continue


def terminate(procs: list[psutil.Process], grace: float = 10.0) -> list[psutil.Process]:
    """TERM, wait ``grace`` seconds, KILL what is left; return the processes still alive after that."""
    procs = alive(procs)
    if not procs:
        return []
    signal_all(procs, signal.SIGTERM)
    _, remaining = psutil.wait_procs(procs, timeout=grace)
    if remaining:
        signal_all(remaining, signal.SIGKILL)
        _, remaining = psutil.wait_procs(remaining, timeout=5)
    return alive(remaining)
