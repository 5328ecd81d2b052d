"""Process trees that take turns on the machine: each runs alone for a slice, stopped while the others run.

On a virtual machine whose CPUs change speed from one minute to the next, unseen by the guest (bench/README.md),
runs made one after the other measure the machine as much as the code: the same script's rate moved by ±15 %
between neighbouring runs. Started together and switched every fraction of a second with SIGSTOP and SIGCONT, the
sides share every minute of the machine: each has all of it during its own slices, as a run alone has, and a change
in the machine's speed hits them alike. A side's rate is then its steps over the time it ran: its own timestamps'
window less the time it spent stopped inside it (``Turns.active``).

Each side is a command's whole process tree (its descendants, and orphans the bench adopted, are found at every
switch: ``members``). A stopped tree cannot start a process, so stopping until no new member appears leaves none
running. POSIX only (SIGSTOP, SIGCONT); ``release`` lets every tree run on however the turns end.
"""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass, field

import psutil


def overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


@dataclass
class Side:
    name: str
    proc: subprocess.Popen
    known: dict[int, psutil.Process] = field(default_factory=dict)
    # (start, end) of each time it was stopped, by the wall clock (time.time, as training timestamps are) and by
    # the monotonic one (time.monotonic, as bench.process_cpu samples are)
    stopped_wall: list[tuple[float, float]] = field(default_factory=list)
    stopped_mono: list[tuple[float, float]] = field(default_factory=list)
    _since: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        self.known[self.proc.pid] = psutil.Process(self.proc.pid)

    def members(self) -> list[psutil.Process]:
        """The tree's live processes: the command, its descendants, and every descendant of a process seen before
        (an orphan re-parented to the bench stays this side's). One pass over the process table."""
        children: dict[int, list[psutil.Process]] = {}
        for proc in psutil.process_iter(["ppid"]):
            children.setdefault(proc.info["ppid"], []).append(proc)
        queue = list(self.known)
        while queue:
            for child in children.get(queue.pop(), []):
                if child.pid not in self.known:
                    self.known[child.pid] = child
                    queue.append(child.pid)
        return self.alive()

    def alive(self) -> list[psutil.Process]:
        return [p for p in self.known.values() if live(p)]

    def stop(self) -> None:
        """Stop every process of the tree, again until no new one appears (one may have started meanwhile)."""
        signalled: set[int] = set()
        while fresh := [p for p in self.members() if p.pid not in signalled]:
            for proc in fresh:
                send(proc, signal.SIGSTOP)
                signalled.add(proc.pid)
        self._since = (time.time(), time.monotonic())

    def resume(self) -> None:
        if self._since is not None:
            wall, mono = self._since
            self.stopped_wall.append((wall, time.time()))
            self.stopped_mono.append((mono, time.monotonic()))
            self._since = None
        for proc in self.alive():  # a stopped tree started no process
            send(proc, signal.SIGCONT)

    def done(self) -> bool:
        """Whether every process of the tree has exited (none left can start another)."""
        self.proc.poll()  # reap the command, so it no longer counts
        return not self.alive()

    def active(self, start: float, end: float) -> float:
        """Seconds this side ran between two wall-clock times: ``end - start`` less the time it was stopped."""
        return (end - start) - sum(overlap(s, (start, end)) for s in self.stopped_wall)

    def paused_mono(self, start: float, end: float) -> float:
        """Seconds this side was stopped between two monotonic times."""
        return sum(overlap(s, (start, end)) for s in self.stopped_mono)


def live(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def send(proc: psutil.Process, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except psutil.Error:  # exited since it was listed
        pass


class Turns:
    """Sides that take turns, ``slice_s`` seconds each, in the order added; a side left alone runs to its end."""

    def __init__(self, slice_s: float):
        if slice_s <= 0:
            raise ValueError(f"slice_s must be > 0, got {slice_s}")
        self.slice_s = slice_s
        self.sides: list[Side] = []

    def add(self, name: str, proc: subprocess.Popen) -> Side:
        """A started command's tree as a side, stopped at once until its turn."""
        side = Side(name, proc)
        side.stop()
        self.sides.append(side)
        return side

    def run(self) -> None:
        """Take turns until every side's tree has exited."""
        while pending := [s for s in self.sides if not s.done()]:
            for side in pending:
                if side.done():
                    continue
                side.resume()
                while len(pending) == 1 and not side.done():  # alone: nothing to share the machine with
                    time.sleep(self.slice_s)
                if len(pending) > 1:
                    time.sleep(self.slice_s)
                    side.stop()

    def release(self) -> None:
        """Let every tree run (after an error or an interrupt: no process is left stopped)."""
        for side in self.sides:
            for proc in side.members():
                send(proc, signal.SIGCONT)

    def side(self, name: str) -> Side:
        return next(s for s in self.sides if s.name == name)
