"""The sides of a speed comparison, run as child processes: one at a time, each to its end, or all together
taking turns on the machine (bench/turns.py), with the CPU their process trees took and what the rest of the
machine took meanwhile.

bench.train_vs_trl runs grpo-tui and a plain TRL script this way; bench.eval_cost runs a side alone.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from subprocess import DEVNULL, STDOUT

import psutil

from bench.common import ROOT
from bench.process_cpu import Sampler, adopt_orphans, children_cpu, machine_busy_seconds, reap_adopted, window
from bench.turns import Turns
from trainer_core.contract.run.event_log import read_events
from trainer_core.contract.run.events import Metrics


@dataclass
class Launch:
    """One side: its command, where its output goes, how far it is (``steps_done``) and, once it has exited, the
    wall-clock time of each logged step (``points``); ``active`` is set where it ran in turns."""

    side: str
    cmd: list[str]
    log: Path
    env: dict
    steps_done: Callable[[], int]
    points: Callable[[], list[tuple[int, float]]] = list
    active: Callable[[float, float], float] | None = None

    def rate(self) -> float:
        """Steps per second from the first to the last logged step, over the time it ran."""
        return steps_per_second(self.points(), self.active)


def steps_per_second(points: list[tuple[int, float]], active: Callable[[float, float], float] | None = None) -> float:
    """Steps per second from the first to the last logged step; ``active(start, end)``: the seconds the side ran
    between two wall-clock times, where it was not running all along (turns)."""
    points = sorted(points)
    if len(points) < 2 or points[-1][1] <= points[0][1]:
        raise ValueError(f"need two timed steps at least, got {points}")
    (first_step, first_time), (last_step, last_time) = points[0], points[-1]
    seconds = active(first_time, last_time) if active else last_time - first_time
    return (last_step - first_step) / seconds


def event_points(events_file: Path) -> list[tuple[int, float]]:
    """(step, wall-clock time) of each metrics event of a run."""
    return [(e.step, e.time) for e in read_events(events_file) if isinstance(e, Metrics) and e.time is not None]


def failed(launch: Launch, code: int) -> None:
    tail = launch.log.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
    sys.exit(f"{launch.cmd[1:4]} exited with {code}; last lines of {launch.log}:\n" + "\n".join(tail))


class Tree:
    """The CPU of the processes the bench starts from here on, to the tick: the rest of the machine's busy time
    meanwhile is other work. Counted exactly where this process can adopt its orphans (``adopt_orphans``: Linux;
    a run's root outlives the foreground ``grpo-tui train``), else from the samplers' last samples, which miss
    what a process spent after them."""

    def __init__(self) -> None:
        self.exact = adopt_orphans()
        self.keep = {child.pid for child in psutil.Process().children()}  # e.g. --busy's spinner: other work
        self.start, self.busy, self.reaped = time.perf_counter(), machine_busy_seconds(), children_cpu()

    def done(self, samplers: list[Sampler]) -> dict:
        """Reap the adopted orphans and stop the samplers; the wall time and the other work's CPU seconds."""
        exact = reap_adopted(self.keep) and self.exact
        for sampler in samplers:
            sampler.stop()
        wall, busy_after = time.perf_counter() - self.start, machine_busy_seconds()
        if exact:
            own = children_cpu() - self.reaped
        else:
            own = sum(sum(s.samples[-1].cpu.values()) for s in samplers if s.samples)
        others = None if self.busy is None or busy_after is None else max(0.0, busy_after - self.busy - own)
        return {"wall_s": round(wall, 2), "other_cpu_s": None if others is None else round(others, 2)}


def start(launch: Launch, out) -> subprocess.Popen:
    return subprocess.Popen(launch.cmd, stdin=DEVNULL, stdout=out, stderr=STDOUT, env=launch.env, cwd=ROOT)


def run_alone(launch: Launch) -> dict:
    """Run one side to its end (exit showing its log if it fails): its wall time, the other work's CPU meanwhile
    (on a shared machine, what makes one run slower than its neighbours) and its processes' CPU by role."""
    tree = Tree()
    with open(launch.log, "w", encoding="utf-8") as out:
        proc = start(launch, out)
        sampler = Sampler(proc.pid, launch.steps_done)
        code = proc.wait()
        found = tree.done([sampler])
    if code != 0:
        failed(launch, code)
    return found | {"processes": window(sampler.samples)}


def run_in_turns(launches: list[Launch], slice_s: float) -> list[dict]:
    """Start every side at once and let them take turns on the machine, ``slice_s`` seconds each, until all have
    exited; each launch's ``active`` then says when it ran. Wall time and other work are the round's."""
    turns, samplers, files, tree = Turns(slice_s), [], [], Tree()
    try:
        for launch in launches:
            files.append(out := open(launch.log, "w", encoding="utf-8"))
            turns.add(launch.side, proc := start(launch, out))
            samplers.append(Sampler(proc.pid, launch.steps_done))
        turns.run()
    finally:
        turns.release()
        for out in files:
            out.close()
    codes = [side.proc.wait() for side in turns.sides]
    found = tree.done(samplers)
    for launch, code in zip(launches, codes):
        if code != 0:
            failed(launch, code)
    results = []
    for launch, side, sampler in zip(launches, turns.sides, samplers):
        launch.active = side.active
        results.append(found | {"processes": window(sampler.samples, side.paused_mono)})
    return results
