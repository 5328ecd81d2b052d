"""Does vLLM on a CPU speed up GRPO? Steps per second of a colocate run against transformers generation.

Trains the ``--for-vllm`` tiny model (heads of 32, which vLLM's CPU attention needs) on the pattern task with
``.venv-vllm/bin/grpo-tui train`` (built by ``./dev vllm-env``; docs/vllm-cpu.md), once with ``--use-vllm
--vllm-mode colocate`` and once without, same model and settings, alternating vllm, hf, vllm, hf ... so drift in
the machine's speed hits both alike, and prints each run's steps per second (from the per-step ``on_log``
timestamps, first to last: process start, model load and the engine's start are not counted), the medians and
their ratio. Then the engine's start-up time on its own: ``vllm.LLM(model)`` in a fresh process, to ready.

A benchmark, not a test: there is no target, the ratio depends on the model's size and the completion length.

    python -m bench.vllm_cpu [--steps 30] [--rounds 2] [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common import PATTERN_FLAGS, ROOT, work_dir
from bench.sides import event_points, steps_per_second

VLLM_BIN = ROOT / ".venv-vllm" / "bin"
ENGINE_START = """
import json, sys, time
start = time.perf_counter()
from vllm import LLM
llm = LLM(model=sys.argv[1], max_model_len=512, max_num_batched_tokens=4096)
ready = time.perf_counter() - start
llm.generate(["Write the letter a many times:"])
print("ENGINE_READY_S", json.dumps(ready))  # vLLM writes to stdout too
"""


def env_for(work: Path) -> dict:
    from trainer_core.generation.vllm_cpu_sync import engine_env

    return {**os.environ, "PYTHONUNBUFFERED": "1", **engine_env(work / "engine")}


def run_once(model: Path, steps: int, work: Path, tag: str, use_vllm: bool) -> float:
    runs = work / f"{tag}-runs"
    cmd = [
        str(VLLM_BIN / "grpo-tui"),
        "train",
        "--model",
        str(model),
        *PATTERN_FLAGS,
        "--rl-top-k",
        "0",
        "--max-steps",
        str(steps),
        "--save-steps",
        "1000000",
        "--runs-dir",
        str(runs),
        *(["--use-vllm", "--vllm-mode", "colocate"] if use_vllm else []),
    ]
    log = work / f"{tag}.log"
    with open(log, "w", encoding="utf-8") as out:
        code = subprocess.call(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env_for(work))
    if code != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
        sys.exit(f"{tag} exited with {code}; last lines of {log}:\n" + "\n".join(tail))
    [events] = sorted(runs.rglob("events.jsonl"))
    return steps_per_second(event_points(events))


def engine_start(model: Path, work: Path) -> float:
    done = subprocess.run(
        [str(VLLM_BIN / "python"), "-c", ENGINE_START, str(model)],
        capture_output=True,
        text=True,
        env=env_for(work),
        timeout=900,
    )
    if done.returncode != 0:
        sys.exit(f"the engine did not start:\n{done.stderr[-3000:]}")
    [line] = [x for x in done.stdout.splitlines() if x.startswith("ENGINE_READY_S ")]
    return float(line.split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.vllm_cpu", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--steps", type=int, default=30, help="optimizer steps per run (default 30)")
    parser.add_argument("--rounds", type=int, default=2, help="pairs of runs, vllm then hf (default 2)")
    parser.add_argument("--work-dir", type=Path, default=None, help="keep the runs and logs here")
    args = parser.parse_args()
    if not (VLLM_BIN / "grpo-tui").exists():
        sys.exit(f"{VLLM_BIN / 'grpo-tui'} is missing: run ./dev vllm-env first")
    work = work_dir(args.work_dir, "bench-vllm-cpu-")
    model = work / "tiny-vllm"
    subprocess.run(
        [str(VLLM_BIN / "grpo-tui"), "tiny-model", str(model), "--for-vllm"], check=True, stdout=subprocess.DEVNULL
    )
    rates: dict[str, list[float]] = {"vllm": [], "hf": []}
    for i in range(args.rounds):
        for side in ("vllm", "hf"):
            t = time.perf_counter()
            rate = run_once(model, args.steps, work, f"{side}-{i}", side == "vllm")
            rates[side].append(rate)
            print(f"{side} round {i}: {rate:.2f} steps/s ({time.perf_counter() - t:.0f} s in all)", flush=True)
    ready = engine_start(model, work)
    vllm, hf = statistics.median(rates["vllm"]), statistics.median(rates["hf"])
    print(f"colocate vLLM: {vllm:.2f} steps/s (runs: {', '.join(f'{r:.2f}' for r in rates['vllm'])})")
    print(f"transformers:  {hf:.2f} steps/s (runs: {', '.join(f'{r:.2f}' for r in rates['hf'])})")
    print(f"ratio vLLM/transformers: {vllm / hf:.2f}")
    print(f"engine start-up (LLM(model) to ready): {ready:.1f} s; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
