"""Is the monitor fast and light enough? Load time, live latency, CPU, memory and cold start of the app.

The app is only useful if it keeps up with a trainer without getting in its way: opening a long run must
feel instant, a new step must show up quickly, and watching a run must cost next to nothing. This measures,
in one run, against synthetic run folders in the documented format (docs/run-format.md):

  load       100k-step run (25 metric keys a step, ~105 MB of events.jsonl) until the monitor holds every
             point: RunStream.poll() alone, its fast path and the reference path alternated (--repeat each),
             and the real app under run_test until the charts are painted (--repeat times); side by side,
             the same scalars in a TensorBoard event file loaded by EventAccumulator
  latency    a writer process logs 10 steps/s; time from the event's `time` to the monitor's worker
             reading it, the charts taking it and the reward chart painting it (p50/p95/max)
  cpu        `grpo-tui watch RUN` in a 120x40 tmux pane while a run logs 10 steps/s: CPU share of a core
  rss        peak RSS of the app (run_test) loading a 1M-step run
  coldstart  `python -m grpo_tui watch RUN` in tmux until the pane shows the run id; import time alone

Generated runs are cached in the work dir; each measurement runs in a fresh process (bench/app_probes.py); the load
section is bench/app_load.py.

    python -m bench.app [--work-dir DIR] [--only NAME] [--skip-tensorboard] [--profile]

TensorBoard (`pip install tensorboard`) is needed for the side-by-side only; torch provides its writer.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

from bench.app_load import LOAD_STEPS, LOAD_TARGET, PROBES, bench_load
from bench.app_runs import METRICS, RATE, cached_run, fresh_live_run, go, start_writer
from bench.common import (
    ROOT,
    SIZE,
    Table,
    child_env,
    cpu_shares,
    median_of_all,
    percentile,
    run_each,
    run_probe,
    shown_at,
    shown_runs,
    stop_process,
    terminal,
    work_dir,
)
from trainer_core.contract.run.folder import RunFolder

BENCHES = ("load", "latency", "cpu", "rss", "coldstart")
RSS_STEPS = 1_000_000
SMALL_STEPS = 200
LATENCY_STEPS = 150
CPU_SECONDS = 20.0
IDLE_SECONDS = 10.0
TARGETS = {"load": LOAD_TARGET, "latency_p95": 0.250, "cpu": 0.05, "rss_mb": 200.0, "coldstart": 1.0}
WATCH_MODULES = ["grpo_tui.cli", "grpo_tui.app", "grpo_tui.screens.runs", "grpo_tui.screens.monitor"]


def watch_argv(folder: RunFolder) -> list[str]:
    return [sys.executable, "-m", "grpo_tui", "watch", str(folder.path), "--runs-dir", str(folder.path.parent)]


def bench_latency(work: Path, table: Table, args) -> None:
    table.section(f"latency: writer at {RATE:g} steps/s, {LATENCY_STEPS} steps, app under run_test {SIZE[0]}x{SIZE[1]}")
    folder = fresh_live_run(work, "latency")
    result = run_probe(PROBES, "app-latency", folder.path, LATENCY_STEPS, timeout=LATENCY_STEPS / RATE + 120)
    labels = {
        "read": "monitor worker read it",
        "plotted": "charts given it (UI thread)",
        "painted": "reward chart painted it",
    }
    for name, label in labels.items():
        delays = [d * 1000 for d in result[name]]
        table.add(
            f"write -> {label}: p50",
            percentile(delays, 0.5),
            unit="ms",
            fmt="{:.0f}",
            note=f"{len(delays)}/{result['steps']} steps",
        )
        # the target is the reward chart painting the step
        table.add(
            f"write -> {label}: p95",
            percentile(delays, 0.95),
            unit="ms",
            fmt="{:.0f}",
            target=TARGETS["latency_p95"] * 1000 if name == "painted" else None,
        )
        table.add(f"write -> {label}: max", max(delays) if delays else None, unit="ms", fmt="{:.0f}")


def bench_cpu(work: Path, table: Table, args) -> None:
    table.section(
        f"cpu: `grpo-tui watch RUN` in tmux {SIZE[0]}x{SIZE[1]}, run logging {RATE:g} steps/s, {CPU_SECONDS:g} s window"
    )
    folder = fresh_live_run(work, "cpu")
    warmup = 3.0
    writer = start_writer(folder, int(RATE * (warmup + CPU_SECONDS + 30)))
    tmux = terminal("cpu")
    try:
        tmux.start(watch_argv(folder), ROOT)
        if shown_at(tmux, folder.run_id, timeout=30) is None:
            raise RuntimeError(f"the app did not show the run id; pane:\n{tmux.screen()}")
        app, server = tmux.command(), psutil.Process(tmux.server_pid())
        time.sleep(warmup)
        idle_app, _ = cpu_shares(app, server, IDLE_SECONDS)
        go(writer)
        time.sleep(warmup)
        app_share, server_share = cpu_shares(app, server, CPU_SECONDS)
        screen = tmux.screen()
    finally:
        tmux.kill()
        stop_process(writer)
    step_line = next((line.strip() for line in screen.splitlines() if "step " in line), "?")
    table.add(
        "app process CPU (share of one core)", app_share * 100, unit="%", fmt="{:.1f}", target=TARGETS["cpu"] * 100
    )
    table.add("tmux server CPU (drawing the pane)", server_share * 100, unit="%", fmt="{:.1f}")
    table.add(
        f"app CPU, same live run before it logs a step ({IDLE_SECONDS:g} s)", idle_app * 100, unit="%", fmt="{:.1f}"
    )
    table.text("pane header at the end", step_line[:70])


def bench_rss(work: Path, table: Table, args) -> None:
    keys = args.rss_keys
    folder = cached_run(work, f"rss1m-{keys}k", RSS_STEPS, keys)
    size = folder.events_file.stat().st_size
    table.section(f"rss: {RSS_STEPS:,} steps x {keys} keys, events.jsonl {size / 1e6:.0f} MB, app under run_test")
    app = run_probe(PROBES, "app-load", folder.path.parent, folder.path, RSS_STEPS, 1200, timeout=1500)
    table.add(
        "peak RSS while loading (ru_maxrss)", app["peak_rss_mb"], unit="MB", fmt="{:.0f}", target=TARGETS["rss_mb"]
    )
    table.add("peak RSS of the backlog child reading it", app["children_peak_rss_mb"], unit="MB", fmt="{:.0f}")
    table.add("RSS once painted", app["rss_mb"], unit="MB", fmt="{:.0f}")
    table.add(
        "every key at 16 B/point (what a naive store would hold)",
        (keys + 1) * 16 * RSS_STEPS / 2**20,
        unit="MB",
        fmt="{:.0f}",
    )
    table.add("time until the reward chart painted all points", app["painted"], note=f"{app['points']:,} points")


def bench_coldstart(work: Path, table: Table, args) -> None:
    small = cached_run(work, "small", SMALL_STEPS)
    table.section(f"coldstart: `python -m grpo_tui watch RUN` in tmux {SIZE[0]}x{SIZE[1]} until the run id shows")
    times = [cold_start(small) for _ in range(args.repeat)]
    table.add(
        f"{SMALL_STEPS}-step run: median of {len(times)}",
        median_of_all(times),
        target=TARGETS["coldstart"],
        note=shown_runs(times),
    )
    big = cached_run(work, "load100k", LOAD_STEPS)
    table.add(f"{LOAD_STEPS:,}-step run (the header shows before the charts)", cold_start(big))
    for modules in (["grpo_tui.app"], WATCH_MODULES):
        imports = [import_seconds(modules) for _ in range(args.repeat)]
        label = "grpo_tui.app" if len(modules) == 1 else "cli, app, screens.runs, screens.monitor"
        table.add(f"import {label}: median of {len(imports)}", statistics.median(imports))
    bare = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=child_env())
        bare.append(time.perf_counter() - t)
    table.add("python -c pass (interpreter start)", statistics.median(bare))


def cold_start(folder: RunFolder) -> float | None:
    tmux = terminal("cold")
    t = time.perf_counter()
    try:
        tmux.start(watch_argv(folder), ROOT)
        shown = shown_at(tmux, folder.run_id, timeout=60)
    finally:
        tmux.kill()
    return None if shown is None else shown - t


def import_seconds(modules: list[str]) -> float:
    """Seconds to import ``modules`` in a fresh interpreter that has imported nothing else."""
    code = f"import time; t = time.perf_counter(); import {', '.join(modules)}; print(time.perf_counter() - t)"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=child_env(), cwd=ROOT
    )
    return float(proc.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.app", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--work-dir", type=Path, default=None, help="cache generated runs here (default: a temp dir)")
    parser.add_argument("--only", choices=BENCHES, action="append", help="run only this benchmark (repeatable)")
    parser.add_argument("--skip-tensorboard", action="store_true", help="skip the TensorBoard side of 'load'")
    parser.add_argument(
        "--tb-steps",
        type=int,
        default=LOAD_STEPS,
        help="steps of the TensorBoard file; fewer are measured and scaled to 100k",
    )
    parser.add_argument(
        "--rss-keys",
        type=int,
        default=len(METRICS),
        choices=range(1, len(METRICS) + 1),
        metavar=f"1..{len(METRICS)}",
        help="metric keys per step of the 1M-step run",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="loads, cold starts (and import timings) to take the median of"
    )
    parser.add_argument("--profile", action="store_true", help="print a cProfile of RunStream.poll on the 100k run")
    args = parser.parse_args()
    chosen = [name for name in BENCHES if name in (args.only or BENCHES)]
    if shutil.which("tmux") is None and {"cpu", "coldstart"} & set(chosen):
        parser.error("the cpu and coldstart benchmarks need tmux")
    work = work_dir(args.work_dir, "grpo-app-bench-")
    table = Table()
    benches = {
        "load": bench_load,
        "latency": bench_latency,
        "cpu": bench_cpu,
        "rss": bench_rss,
        "coldstart": bench_coldstart,
    }
    run_each(chosen, lambda name: benches[name](work, table, args))
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
