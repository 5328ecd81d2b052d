"""Does the runs list scale? `grpo-tui runs --json`, the runs screen's first paint and its idle CPU, 10k runs.

Teams keep thousands of finished runs in one shared folder, and the list must cost O(1) small reads per
finished run (the `summary` each run's state.json gets at its end, docs/run-format.md) and nothing while
nothing changes. Over N finished runs (default 10,000, bench/many_runs.py) this measures:

  cli    `python -m grpo_tui runs --json` over them, warm (page cache), median of 3
  paint  `python -m grpo_tui --runs-dir DIR` in a 120x40 tmux pane until the newest run's id shows in the
         table's first row, median of 3
  idle   the same app on the runs screen once it has loaded every run (its title counts them) and added
         their rows: its CPU time over 20 s (psutil), as a share of a core; and the same with one live run
         among them (not a target: its row changes at every refresh)

Side by side, the same runs as they were before summaries existed (a second runs dir: the same files,
hard-linked, and state.json without `summary`): `runs --json` (and the ratio), the first paint and the
idle CPU.

    python -m bench.runs_list [--work-dir DIR] [--runs 10000] [--only cli|paint|idle]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench.common import (
    ROOT,
    SIZE,
    Table,
    child_env,
    cpu_shares,
    median_of_all,
    run_each,
    shown_at,
    shown_runs,
    terminal,
    work_dir,
)
from bench.many_runs import make_runs, newest_id
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import process_start_time
from trainer_core.contract.run.status import Status

BENCHES = ("cli", "paint", "idle")
TARGETS = {"cli": 1.0, "paint": 1.5, "idle": 0.05}
IDLE_SECONDS = 20.0
WARMUP = 5.0  # after the title counts every run, the table still adds rows in batches for a few seconds


def runs_json(runs: Path) -> tuple[float, int]:
    """Wall seconds of one `grpo-tui runs --json`, and how many rows it printed."""
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "grpo_tui", "runs", "--json", "--runs-dir", str(runs)],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=ROOT,
        timeout=600,
    )
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"grpo-tui runs --json failed:\n{proc.stderr[-3000:]}")
    return seconds, len(json.loads(proc.stdout))


def bench_cli(work: Path, runs: Path, legacy: Path, table: Table, args) -> None:
    table.section(f"cli: `grpo-tui runs --json` over {args.runs:,} finished runs, warm")
    runs_json(runs)  # warms the page cache
    results = [runs_json(runs) for _ in range(args.repeat)]
    times = [t for t, _ in results]
    table.add(
        f"with summaries: median of {len(times)}",
        statistics.median(times),
        target=TARGETS["cli"],
        note=f"{results[0][1]:,} rows; " + shown_runs(times),
    )
    if args.skip_legacy:
        return
    runs_json(legacy)
    old = [runs_json(legacy) for _ in range(args.legacy_repeat)]
    old_times = [t for t, _ in old]
    table.add(
        f"without summaries (runs that ended before them): median of {len(old)}",
        statistics.median(old_times),
        note=f"{old[0][1]:,} rows",
    )
    table.add("ratio without / with", statistics.median(old_times) / statistics.median(times), unit="", fmt="{:.1f}x")
    base = Path(tempfile.mkdtemp(prefix="empty-runs-", dir=work))
    empty = [runs_json(base)[0] for _ in range(args.repeat)]
    table.add("an empty runs dir (interpreter start and imports)", statistics.median(empty))


def app_argv(runs: Path) -> list[str]:
    return [sys.executable, "-m", "grpo_tui", "--runs-dir", str(runs)]


@contextlib.contextmanager
def runs_screen(runs: Path, wanted: str):
    """The app in a tmux pane, and the seconds from its start until ``wanted`` (the newest run id) showed in the
    table's first rows (None if it did not)."""
    tmux = terminal("paint")
    t = time.perf_counter()
    try:
        tmux.start(app_argv(runs), ROOT)
        shown = shown_at(tmux, wanted, timeout=120, top_lines=4)
        yield tmux, None if shown is None else shown - t
    finally:
        tmux.kill()


def first_paint(runs: Path, wanted: str) -> float | None:
    with runs_screen(runs, wanted) as (_, painted):
        return painted


def bench_paint(work: Path, runs: Path, legacy: Path, table: Table, args) -> None:
    table.section(
        f"paint: `grpo-tui --runs-dir DIR` in tmux {SIZE[0]}x{SIZE[1]} until the newest of {args.runs:,} runs shows"
    )
    wanted = newest_id(runs)
    times = [first_paint(runs, wanted) for _ in range(args.repeat)]
    table.add(
        f"first paint: median of {len(times)}", median_of_all(times), target=TARGETS["paint"], note=shown_runs(times)
    )


def idle_cpu(runs: Path, count: int) -> tuple[float | None, float, float, str]:
    with runs_screen(runs, newest_id(runs)) as (tmux, painted):
        # idle means loaded: the title counts every run once the first load has read them all
        if painted is None or shown_at(tmux, f"({count})", timeout=300, top_lines=1) is None:
            raise RuntimeError(f"the app did not show the runs; pane:\n{tmux.screen()}")
        app, server = tmux.command(), psutil.Process(tmux.server_pid())
        time.sleep(WARMUP)
        app_share, server_share = cpu_shares(app, server, IDLE_SECONDS)
        title = tmux.screen().splitlines()[0].strip()
    return painted, app_share, server_share, title


@contextlib.contextmanager
def live_run(runs: Path):
    """A running run, newest of all, whose recorded process (a `sleep`) lives while the block runs."""
    sleeper = subprocess.Popen(["sleep", "600"])
    folder = None
    try:
        while process_start_time(sleeper.pid) is None:
            time.sleep(0.01)
        folder = RunFolder.create(runs, "29991231-000000-000-live00")
        folder.initial_state(sleeper.pid)
        folder.write_state(status=Status.RUNNING, max_steps=100)
        yield folder
    finally:
        sleeper.kill()
        sleeper.wait()
        if folder is not None:
            shutil.rmtree(folder.path)


def bench_idle(work: Path, runs: Path, legacy: Path, table: Table, args) -> None:
    table.section(f"idle: the runs screen with {args.runs:,} runs, nothing changing, {IDLE_SECONDS:g} s window")
    _, share, server, title = idle_cpu(runs, args.runs)
    table.add("app process CPU (share of one core)", share * 100, unit="%", fmt="{:.1f}", target=TARGETS["idle"] * 100)
    table.add("tmux server CPU (drawing the pane)", server * 100, unit="%", fmt="{:.1f}")
    table.text("title at the end", title[:70])
    with live_run(runs):
        _, live_share, _, _ = idle_cpu(runs, args.runs + 1)
    table.add(
        "the same with one live run among them (its row ticks every refresh)", live_share * 100, unit="%", fmt="{:.1f}"
    )
    if args.skip_legacy:
        return
    painted, old_share, _, _ = idle_cpu(legacy, args.runs)
    table.add("without summaries: first paint", painted)
    table.add(
        "without summaries: app CPU while idle",
        old_share * 100,
        unit="%",
        fmt="{:.1f}",
        note="only the first load reads the files; later refreshes stat them",
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.runs_list", description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--work-dir", type=Path, default=None, help="cache the generated runs here (default: a temp dir)"
    )
    parser.add_argument("--runs", type=int, default=10_000, help="finished runs to generate")
    parser.add_argument("--only", choices=BENCHES, action="append", help="run only this benchmark (repeatable)")
    parser.add_argument("--repeat", type=int, default=3, help="measurements to take the median of")
    parser.add_argument("--legacy-repeat", type=int, default=1, help="measurements of the runs without summaries")
    parser.add_argument("--skip-legacy", action="store_true", help="leave out the runs without summaries")
    args = parser.parse_args()
    chosen = [name for name in BENCHES if name in (args.only or BENCHES)]
    if shutil.which("tmux") is None and {"paint", "idle"} & set(chosen):
        parser.error("the paint and idle benchmarks need tmux")
    work = work_dir(args.work_dir, "grpo-runs-bench-")
    runs, legacy = make_runs(work, args.runs)
    table = Table()
    benches = {"cli": bench_cli, "paint": bench_paint, "idle": bench_idle}
    run_each(chosen, lambda name: benches[name](work, runs, legacy, table, args))
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
