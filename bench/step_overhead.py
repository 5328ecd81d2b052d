"""What does grpo-tui's own code cost a training step? Its per-step work inside the trainer, timed, against the step.

bench.train_vs_trl compares whole runs, whose speed on a shared or virtual machine spreads by more than the
2 % its target allows. This times, inside one trainer, what grpo-tui adds to each step of TRL's loop: the
event callback (the metrics event, the health rules, the sample statistics, the echo line, the stop check) and
the sample recorder the reward function calls (statistics of every completion, the kept samples' write), through
``bench/step_overhead_probe.py``. The trainer is ``python -m trainer_core worker`` in a run folder made as
``grpo-tui train`` makes one (the bench's pattern settings, the trainer alone: no root, no tail). It prints, per
run, the step time (first to last logged step), grpo-tui's own milliseconds per step by part, and their share of
the step, which the same code gives on any machine within a few tenths of a percent.

    python -m bench.step_overhead [--steps 200] [--rounds 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import RESULT_PREFIX, ROOT, module_cmd
from bench.train_vs_trl import flags_config, thread_env, train_flags
from trainer_core.commands.tiny_model import build_tiny_model
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import read_events
from trainer_core.contract.run.events import Metrics
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import run_env

PARTS = ("health", "stats_pop", "recorder", "on_step_end")


def base_config(model_dir: Path, work: Path, steps: int) -> RunConfig:
    """The config ``grpo-tui train`` makes of the benches' flags, for ``steps`` steps."""
    return flags_config(train_flags(model_dir, steps, work / "runs"))


def one_run(config: RunConfig, work: Path, tag: str, env: dict) -> dict:
    folder = RunFolder.create(work / f"{tag}-runs")
    folder.save_config(config)
    folder.write_state(run_id=folder.run_id, status="starting", started=round(time.time(), 3))
    done = subprocess.run(
        module_cmd("bench.step_overhead_probe", folder.path),
        env=run_env(folder.path, env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if done.returncode != 0 or not lines:
        sys.exit(f"the trainer exited with {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    seconds = json.loads(lines[-1][len(RESULT_PREFIX) :])["seconds"]
    points = sorted((e.step, e.time) for e in read_events(folder.events_file) if isinstance(e, Metrics) and e.time)
    (first, t0), (last, t1) = points[0], points[-1]
    steps = len(points)
    own = seconds.get("on_log", 0.0) + seconds.get("on_step_end", 0.0) + seconds.get("recorder", 0.0)
    per_step = {part: 1000 * seconds.get(part, 0.0) / steps for part in PARTS}
    per_step["events"] = (
        1000 * (seconds.get("on_log", 0.0) - seconds.get("health", 0.0) - seconds.get("stats_pop", 0.0)) / steps
    )
    step_ms = 1000 * (t1 - t0) / (last - first)
    return {
        "step_ms": step_ms,
        "own_ms": 1000 * own / steps,
        "parts_ms": per_step,
        "share": own / steps * 1000 / step_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.step_overhead", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps per run (default: 200)")
    parser.add_argument("--rounds", type=int, default=3, help="runs (default: 3)")
    parser.add_argument(
        "--threads", type=int, default=1, help="OMP_NUM_THREADS=MKL_NUM_THREADS=N; 0: torch's default (default: 1)"
    )
    parser.add_argument("--model-dir", type=Path, default=None, help="tiny model folder, built if missing")
    parser.add_argument("--work-dir", type=Path, default=None, help="keep run folders under DIR (default: temporary)")
    args = parser.parse_args()
    if args.steps < 10 or args.rounds < 1 or args.threads < 0:
        parser.error("--steps must be >= 10, --rounds >= 1 and --threads >= 0")
    with tempfile.TemporaryDirectory(prefix="grpo-tui-bench-") as tmp:
        base = args.work_dir or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="overhead-", dir=base)).resolve()
        model_dir = (args.model_dir or base / "tiny-model").resolve()
        build_tiny_model(model_dir)
        config = base_config(model_dir, work, args.steps)
        env = thread_env(args.threads or None)
        print(f"{args.rounds} runs x {args.steps} steps, threads {args.threads or 'default'}; ms per step", flush=True)
        print(
            f"{'run':>3}  {'step':>7}  {'own':>6}  {'share':>6}  " + "  ".join(f"{p:>11}" for p in (*PARTS, "events"))
        )
        runs = []
        for r in range(1, args.rounds + 1):
            found = one_run(config, work, f"run-{r}", env)
            runs.append(found)
            parts = "  ".join(f"{found['parts_ms'][p]:>11.3f}" for p in (*PARTS, "events"))
            print(
                f"{r:>3}  {found['step_ms']:>7.2f}  {found['own_ms']:>6.3f}  {found['share']:>6.2%}  {parts}",
                flush=True,
            )
    share = statistics.median(r["share"] for r in runs)
    own = statistics.median(r["own_ms"] for r in runs)
    print(f"grpo-tui's own code per step: {own:.3f} ms, {share:.2%} of a step (medians of {len(runs)})")


if __name__ == "__main__":
    main()
