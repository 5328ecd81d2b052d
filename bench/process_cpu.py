"""CPU time and wake-ups of a training's processes, by role, for bench.train_vs_trl.

grpo-tui runs three processes where a plain script runs one: the foreground ``grpo-tui train`` tailing the run
folder, the run's root (stall watch, notifier) and the trainer. The helpers must stay off the CPUs the trainer's
threads fill, so the bench samples each process of the tree (psutil ``cpu_times``, and the voluntary context
switches of every thread from /proc, which count how often it woke up, and the involuntary ones, how often it
was preempted) every few seconds, and reports per role the CPU per training step, wake-ups and preemptions per
second over the training window (first to last sample with a step logged). The trainer's preemptions are the
contention itself: each one stalls torch's other threads at their next barrier. The tree's CPU in all, from
which the bench tells what other work took meanwhile, is not sampled but read as the tree is reaped, its
orphans included (``adopt_orphans``).
"""

from __future__ import annotations

import ctypes
import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROLES = ("tail", "root", "worker")
SAMPLE_S = 2.0  # as rare as the stall watch: the sampler must not be the disturbance it measures
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
REAP_WAIT_S = 120.0


def machine_busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy (including time stolen by a hypervisor), or None off Linux."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def adopt_orphans() -> bool:
    """Become the reaper of this process's orphaned descendants (Linux; False elsewhere or if refused).

    A run's root outlives the foreground ``grpo-tui train`` that started it, so it is orphaned as training ends.
    Adopted here and reaped by ``reap_adopted``, its CPU time and its trainer's (which it reaps) reach this
    process's ``RUSAGE_CHILDREN``: the whole tree's CPU, to the last tick, where samples every few seconds miss
    what a process spent after the last one, or all of it when it exited before."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children_cpu() -> float:
    """CPU seconds (user + system) of every descendant this process has reaped so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def reap_adopted(keep: set[int], timeout: float = REAP_WAIT_S) -> bool:
    """Wait for and reap each child of this process but ``keep`` (orphans adopted from a command's tree);
    False if one is still running after ``timeout`` seconds (its CPU is then not counted)."""
    done = True
    for child in psutil.Process().children():
        if child.pid in keep:
            continue
        try:
            child.wait(timeout=timeout)
        except psutil.TimeoutExpired:
            done = False
        except psutil.NoSuchProcess:  # already reaped
            pass
    return done


def role_of(cmdline: list[str]) -> str | None:
    """Which part of a run a process is, from its command line; None for anything else."""
    text = " ".join(cmdline)
    if "trainer_core worker" in text or "bench.plain_trl_grpo" in text:
        return "worker"
    if "trainer_core run" in text:
        return "root"
    if "grpo_tui" in text:
        return "tail"
    return None


def switches(pid: int) -> tuple[int, int]:
    """Context switches of all of ``pid``'s threads: voluntary (each a sleep that ended: a wake-up) and
    involuntary (each a preemption: the thread wanted the CPU and another process got it); zeros off Linux."""
    woke = preempted = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    woke += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    preempted += int(line.split()[1])
    except (OSError, ValueError):
        return 0, 0
    return woke, preempted


@dataclass
class Sample:
    time: float
    step: int
    cpu: dict[str, float]  # CPU seconds (user + system) by role, summed over its live processes
    wakeups: dict[str, int]
    preemptions: dict[str, int]


def take(root: psutil.Process, step: int) -> Sample:
    cpu: dict[str, float] = dict.fromkeys(ROLES, 0.0)
    woke: dict[str, int] = dict.fromkeys(ROLES, 0)
    preempted: dict[str, int] = dict.fromkeys(ROLES, 0)
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = []
    for proc in procs:
        try:
            role = role_of(proc.cmdline())
            if role is None:
                continue
            t = proc.cpu_times()
            cpu[role] += t.user + t.system
            voluntary, involuntary = switches(proc.pid)
            woke[role] += voluntary
            preempted[role] += involuntary
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return Sample(time.monotonic(), step, cpu, woke, preempted)


@dataclass
class Sampler:
    """Samples the tree under ``pid`` every ``every`` seconds in a thread until ``stop``; ``steps()`` says how far
    training is (read from the run's own record)."""

    pid: int
    steps: Callable[[], int]
    every: float = SAMPLE_S
    samples: list[Sample] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            root = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return
        while not self._done.wait(self.every):
            try:
                step = self.steps()
            except (OSError, ValueError):
                step = 0
            self.samples.append(take(root, step))

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def window(samples: list[Sample], paused: Callable[[float, float], float] | None = None) -> dict | None:
    """Per role over the training window: CPU ms per step, CPU share of one core, wake-ups and preemptions per second.
    ``paused(start, end)``: the seconds the tree was stopped between two monotonic times (bench/turns.py), left
    out of the window's seconds. None when fewer than two samples saw training (a run shorter than two periods)."""
    seen = [s for s in samples if s.step > 0 and s.cpu["worker"] > 0]
    if len(seen) < 2 or seen[-1].step <= seen[0].step:
        return None
    first, last = seen[0], seen[-1]
    steps, seconds = last.step - first.step, last.time - first.time
    seconds -= paused(first.time, last.time) if paused else 0.0
    out: dict = {"steps": steps, "seconds": round(seconds, 2)}
    for role in ROLES:
        cpu = last.cpu[role] - first.cpu[role]
        out[role] = {
            "cpu_ms_per_step": round(1000 * cpu / steps, 3),
            "cpu_share": round(cpu / seconds, 4),
            "wakeups_per_s": round((last.wakeups[role] - first.wakeups[role]) / seconds, 1),
            "preemptions_per_s": round((last.preemptions[role] - first.preemptions[role]) / seconds, 1),
        }
    return out
