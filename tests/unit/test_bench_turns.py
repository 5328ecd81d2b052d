"""bench/turns.py: process trees that take turns on the machine never run at the same time, a tree's processes
(an orphaned grandchild too) stop and resume together, a side's running time leaves out its stopped time, and no
process is left stopped. Real processes and signals; each child records when it ran."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil

from bench.process_cpu import Sample, window
from bench.sides import steps_per_second
from bench.turns import Side, Turns

# spins for SECONDS of its own CPU time, noting the wall-clock time every 2 ms; with a third argument, first
# starts a copy of itself writing there, and outlives it by 0.3 s of CPU (so the copy is seen before it is orphaned)
CHILD = """
import subprocess, sys, time
out, seconds = sys.argv[1], float(sys.argv[2])
if len(sys.argv) > 3:
    subprocess.Popen([sys.executable, __file__, sys.argv[3], sys.argv[2]])
    seconds = 0.3
stamps, last, end = [], 0.0, time.process_time() + seconds
while (now := time.process_time()) < end:
    if now - last >= 0.002:
        stamps.append(time.time())
        last = now
open(out, "w").write("\\n".join(map(repr, stamps)))
"""
SLACK_S = 0.005


def start(script: Path, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(script), *map(str, args)])


def stamps(path: Path) -> list[float]:
    return [float(v) for v in path.read_text().split()]


def test_sides_take_turns_and_a_stopped_tree_does_not_run(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    turns = Turns(0.1)
    try:
        turns.add("a", start(script, tmp_path / "a", 0.6, tmp_path / "a-orphan"))
        turns.add("b", start(script, tmp_path / "b", 0.6))
        turns.run()
    finally:
        turns.release()
    ran = {"a": stamps(tmp_path / "a") + stamps(tmp_path / "a-orphan"), "b": stamps(tmp_path / "b")}
    for name, times in ran.items():
        side = turns.side(name)
        assert len(side.stopped_wall) >= 2  # it waited for the other side more than once
        during = [t for t in times for s, e in side.stopped_wall if s + SLACK_S < t < e - SLACK_S]
        assert not during, f"side {name} ran while stopped, at {during[:3]}"
    assert len(stamps(tmp_path / "a-orphan")) > 50  # the grandchild ran, and was its side's: stopped with it


def test_release_leaves_no_process_stopped(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        turns = Turns(0.1)
        turns.add("a", proc)
        assert psutil.Process(proc.pid).status() == psutil.STATUS_STOPPED
        turns.release()
        assert psutil.Process(proc.pid).status() != psutil.STATUS_STOPPED
    finally:
        proc.kill()
        proc.wait()


def test_running_time_leaves_out_the_stopped_time():
    side = Side.__new__(Side)
    side.stopped_wall = [(1.0, 2.0), (3.0, 4.0)]
    side.stopped_mono = [(11.0, 12.0)]
    assert side.active(0.0, 5.0) == 3.0
    assert side.active(1.5, 3.5) == 1.0
    assert side.paused_mono(10.0, 11.5) == 0.5
    # 10 steps from t=0 to t=5, stopped 2 s of it: 10 / 3 steps a second, where the wall clock says 10 / 5
    assert steps_per_second([(1, 0.0), (11, 5.0)], side.active) == 10 / 3
    assert steps_per_second([(1, 0.0), (11, 5.0)]) == 2.0


def test_the_process_window_leaves_out_the_stopped_time():
    def at(t: float, step: int, worker: float) -> Sample:
        roles = ("tail", "root", "worker")
        return Sample(
            t, step, {"tail": 0.0, "root": 0.0, "worker": worker}, dict.fromkeys(roles, 0), dict.fromkeys(roles, 0)
        )

    samples = [at(0.0, 5, 1.0), at(4.0, 25, 3.0)]
    found = window(samples, lambda start, end: 2.0)
    assert found is not None and found["seconds"] == 2.0
    assert found["worker"]["cpu_share"] == 1.0  # a core's worth while it ran, not half of one
