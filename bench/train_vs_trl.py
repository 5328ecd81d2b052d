"""Does grpo-tui cost training speed? Steps per second of ``grpo-tui train`` against a plain TRL script.

grpo-tui wraps TRL's GRPOTrainer with an event stream, a stop controller, sample recording and a
foreground viewer tailing the run folder; all of that should be close to free. This runs the same tiny
model with the same settings both ways (bench/plain_trl_grpo.py is the plain side), alternating
grpo-tui, plain, grpo-tui, plain ... so drift in the machine's speed hits both alike, and prints the ratio
of the median steps per second (target >= 0.98).

Both sides are child processes with the same environment (set OMP_NUM_THREADS and the like before
running to pin threads). Steps per second come from the per-step ``on_log`` timestamps, first to last,
so process start, model loading and the final save are not counted.

    python -m bench.train_vs_trl [--steps 200] [--rounds 3] [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import PATTERN_FLAGS, ROOT, child_env, module_cmd
from trainer_core.commands.tiny_model import build_tiny_model
from trainer_core.contract.run.event_log import read_events, read_records
from trainer_core.contract.run.events import Metrics

TARGET = 0.98
# A run during which other processes took more than this share of one CPU is flagged as disturbed: with
# torch's threads on every core, even a little outside work can slow a step many times over.
DISTURBED_SHARE = 0.1


def machine_busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy (including time stolen by a hypervisor), or None off Linux."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_child(cmd: list[str], log: Path) -> tuple[float, float | None]:
    """Run ``cmd`` with its output in ``log``; exit showing the log if it fails.

    Returns its wall time and the CPU seconds other processes took meanwhile: on a shared machine that is
    what makes one run slower than its neighbours, so the table shows it next to every rate.
    """
    start, busy, own = time.perf_counter(), machine_busy_seconds(), children_cpu_seconds()
    with open(log, "w", encoding="utf-8") as out:
        code = subprocess.call(
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=child_env(), cwd=ROOT
        )
    if code != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
        sys.exit(f"{cmd[1:4]} exited with {code}; last lines of {log}:\n" + "\n".join(tail))
    wall, busy_after = time.perf_counter() - start, machine_busy_seconds()
    others = (
        None if busy is None or busy_after is None else max(0.0, busy_after - busy - (children_cpu_seconds() - own))
    )
    return wall, others


def steps_per_second(points: list[tuple[int, float]]) -> float:
    points = sorted(points)
    if len(points) < 2 or points[-1][1] <= points[0][1]:
        raise ValueError(f"need two timed steps at least, got {points}")
    (first_step, first_time), (last_step, last_time) = points[0], points[-1]
    return (last_step - first_step) / (last_time - first_time)


def run_grpo_tui(model_dir: Path, steps: int, work: Path, tag: str) -> tuple[float, float, float | None]:
    runs = work / f"{tag}-runs"
    wall, others = run_child(
        [
            sys.executable,
            "-m",
            "grpo_tui",
            "train",
            "--model",
            str(model_dir),
            *PATTERN_FLAGS,
            "--lr",
            "0.002",
            "--max-steps",
            str(steps),
            "--save-steps",
            "1000000",
            "--mixed-precision",
            "no",
            "--runs-dir",
            str(runs),
        ],
        work / f"{tag}.log",
    )
    found = sorted(runs.rglob("events.jsonl"))
    if len(found) != 1:
        sys.exit(f"expected one events.jsonl under {runs}, found {len(found)}")
    events = read_events(found[0])
    return steps_per_second([(e.step, e.time) for e in events if isinstance(e, Metrics)]), wall, others


def run_plain(model_dir: Path, steps: int, work: Path, tag: str) -> tuple[float, float, float | None]:
    times = work / f"{tag}-times.jsonl"
    wall, others = run_child(
        module_cmd("bench.plain_trl_grpo", model_dir, steps, times, "--output-dir", work / f"{tag}-output"),
        work / f"{tag}.log",
    )
    return steps_per_second([(p["step"], p["time"]) for p in read_records(times)]), wall, others


def bench(model_dir: Path, steps: int, rounds: int, work: Path) -> None:
    build_tiny_model(model_dir)
    threads = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS") if k in os.environ}
    print(
        f"{rounds} rounds x {steps} steps, {os.cpu_count()} CPUs, threads env {threads or 'unset'}; logs in {work}",
        flush=True,
    )
    print(f"{'round':>5}  {'side':<8}  {'steps/s':>8}  {'wall s':>7}  {'other CPU s':>13}", flush=True)
    results: dict[str, list[float]] = {"grpo-tui": [], "plain": []}
    disturbed = 0
    for r in range(1, rounds + 1):
        for side, runner in (("grpo-tui", run_grpo_tui), ("plain", run_plain)):
            rate, wall, others = runner(model_dir, steps, work, f"{side}-{r}")
            results[side].append(rate)
            flag = others is not None and others > DISTURBED_SHARE * wall
            disturbed += flag
            shown = "?" if others is None else f"{others:.1f}" + (" !" if flag else "  ")
            print(f"{r:>5}  {side:<8}  {rate:>8.3f}  {wall:>7.1f}  {shown:>13}", flush=True)

    medians = {side: statistics.median(rates) for side, rates in results.items()}
    print()
    print(f"{'side':<8}  {'median':>8}  individual steps/s")
    for side, rates in results.items():
        print(f"{side:<8}  {medians[side]:>8.3f}  " + "  ".join(f"{v:.3f}" for v in rates))
    if disturbed:
        print(
            f"note: {disturbed} run(s) marked ! shared the CPUs with other work; their rates say little. "
            "Rerun on a quiet machine."
        )
    print(f"ratio grpo-tui/plain: {medians['grpo-tui'] / medians['plain']:.3f} (target >= {TARGET})")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.train_vs_trl", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps per training run (default: 200)")
    parser.add_argument("--rounds", type=int, default=3, help="grpo-tui/plain pairs to run (default: 3)")
    parser.add_argument(
        "--model-dir", type=Path, default=None, help="tiny model folder, built if missing (default: in the work dir)"
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="keep run folders and logs in a new folder under DIR (default: a temporary folder)",
    )
    args = parser.parse_args()
    if args.steps < 2 or args.rounds < 1:
        parser.error("--steps must be >= 2 and --rounds >= 1")

    if args.work_dir is not None:
        args.work_dir.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="bench-", dir=args.work_dir)).resolve()
        bench(args.model_dir or args.work_dir / "tiny-model", args.steps, args.rounds, work)
        return
    with tempfile.TemporaryDirectory(prefix="grpo-tui-bench-") as tmp:
        bench(args.model_dir or Path(tmp) / "tiny-model", args.steps, args.rounds, Path(tmp))


if __name__ == "__main__":
    main()
