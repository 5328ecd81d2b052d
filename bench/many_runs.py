"""Ten thousand finished runs for the runs-list benchmark, and the same runs as they were before summaries existed.

70 % completed, 20 % stopped and 10 % failed (an OOM, an environment error, a SIGKILL, NaN probabilities), a
quarter with a warning, 5 to 60 steps each; each state.json holds the ``summary`` RunFolder.record_end stores. The
runs without summaries are the same files, hard-linked into a second runs dir, with state.json lacking it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from tools.synthetic_runs import write_finished_run, write_text
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import (
    Checkpoint,
    Error,
    Event,
    HealthWarning,
    Metrics,
    RunFinished,
    RunStarted,
    StopRequested,
)
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status

BASE_TIME = 1735689600.0  # 2025-01-01T00:00:00Z
PROJECTS = ("math-grpo", "code-rl", "pattern", "tool-use", "summarize")
MODELS = ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "meta-llama/Llama-3.2-1B-Instruct")
FAILURES = (  # (error kind, message, what trainer.log ends with)
    (
        "exception",
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ),
    ("environment", "score_episode raised KeyError: 'answer'", "KeyError: 'answer'"),
    ("trainer_exit", "the trainer was killed by SIGKILL before it could record its end", ""),
    (
        "exception",
        "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
        "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
    ),
)
VERSION = 3  # of what is generated: a cached runs dir of another version is made again


def run_plan(i: int) -> tuple[Status, int, int]:
    """Run ``i``'s status, logged steps and configured steps: 70 % completed, 20 % stopped, 10 % failed."""
    kind = i % 10
    max_steps = 30 + (i * 7) % 31
    if kind < 7:
        return Status.COMPLETED, max_steps, max_steps
    return (Status.STOPPED if kind < 9 else Status.FAILED), 5 + (i * 3) % (max_steps - 5), max_steps


def metrics_at(step: int, t: float, seed: int) -> Metrics:
    x = (step * 7919 + seed * 104729) % 1000 / 1000
    return Metrics(
        time=t,
        step=step,
        values={
            "loss": round(0.05 * x, 6),
            "grad_norm": round(0.8 + 0.3 * x, 6),
            "learning_rate": 1e-5,
            "num_tokens": float(step * 2048),
            "completions/mean_length": round(40 + 20 * x, 3),
            "completions/clipped_ratio": round(0.1 * x, 4),
            "rewards/score_episode/mean": round(x, 6),
            "rewards/score_episode/std": round(0.3 * x, 6),
            "reward": round(x, 6),
            "reward_std": round(0.3 * x, 6),
            "frac_reward_zero_std": round(x / 2, 4),
            "kl": round(0.01 * step, 6),
            "entropy": round(2 - x, 6),
            "step_time": 10.0,
            "epoch": round(step / 60, 4),
        },
    )


def config_texts(work: Path) -> dict[tuple[str, str, int], str]:
    """config.yaml of every project x model x max_steps, made once (YAML dumping 10k configs would be slow)."""
    texts = {}
    tmp = work / "config.yaml"
    for project in PROJECTS:
        for model in MODELS:
            for max_steps in range(30, 61):
                RunConfig(
                    model=model, project_name=project, rl_env_module="env.py", rl_env_class="Env", max_steps=max_steps
                ).save(tmp)
                texts[(project, model, max_steps)] = tmp.read_text()
    tmp.unlink()
    return texts


def run_events(i: int, run_id: str, started: float) -> tuple[list[Event], list[str]]:
    """Run ``i``'s events, from run_started to run_finished, and its trainer.log."""
    status, steps, max_steps = run_plan(i)
    project, model = PROJECTS[i % len(PROJECTS)], MODELS[i % len(MODELS)]
    start = RunStarted(
        time=started,
        run_id=run_id,
        pid=4_000_000 + i,
        host="bench",
        world_size=1,
        project_name=project,
        model=model,
        max_steps=max_steps,
    )
    events: list[Event] = [start]
    warn_at = steps - 2 if i % 4 == 0 else None
    for step in range(1, steps + 1):
        t = started + 10.0 * step
        events.append(metrics_at(step, t, i))
        if step == warn_at:
            events.append(
                HealthWarning(
                    "reward_flat",
                    Severity.WARN,
                    step,
                    "Reward has not moved for 20 steps.",
                    "Raise --lr.",
                    {"window": 20},
                    time=t + 0.1,
                )
            )
        if step % 20 == 0:
            events.append(Checkpoint(time=t + 0.2, step=step, path=f"checkpoints/checkpoint-{step}"))
    ended = started + 10.0 * steps + 2.0
    log = [f"[grpo-tui] run {run_id}: loading {model}", "[grpo-tui] training: 1 process(es) on cuda:0"]
    if status is Status.COMPLETED:
        reason = None
        events.append(Checkpoint(time=ended - 1, step=steps, path="final", final=True))
    elif status is Status.STOPPED:
        reason = "stop file: grpo-tui stop"
        events.append(StopRequested(time=ended - 1.5, reason=reason, step=steps))
        events.append(Checkpoint(time=ended - 1, step=steps, path=f"checkpoints/checkpoint-{steps}"))
    else:
        kind, reason, last_line = FAILURES[(i // 10) % len(FAILURES)]
        events.append(
            Error(
                time=ended - 1,
                kind=kind,
                message=reason,
                step=steps,
                traceback=f"Traceback (most recent call last):\n{last_line}\n" if last_line else None,
            )
        )
        log += ["Traceback (most recent call last):", '  File "trainer_core/training/runner.py", line 183', last_line]
    events.append(RunFinished(time=ended, status=status, reason=reason, step=steps))
    return events, log


def write_run(runs: Path, legacy: Path, i: int, configs: dict) -> None:
    _, _, max_steps = run_plan(i)
    project, model = PROJECTS[i % len(PROJECTS)], MODELS[i % len(MODELS)]
    started = BASE_TIME + i * 900.0
    run_id = f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime(started))}-{i % 1000:03d}-{i:06x}"
    events, log = run_events(i, run_id, started)
    # the config is known here: the summary needs no YAML parse per run
    known = {"project_name": project, "model": model, "max_steps": max_steps}
    folder = write_finished_run(
        runs, run_id, configs[(project, model, max_steps)], events, log=log, gpus=[0], summary_config=known
    )
    old = legacy / run_id
    old.mkdir(mode=0o700)
    for name in ("config.yaml", "events.jsonl", "trainer.log"):
        os.link(folder.path / name, old / name)
    state = folder.read_state()
    del state["summary"]
    write_text(old / "state.json", json.dumps(state, indent=2) + "\n")


def make_runs(work: Path, count: int) -> tuple[Path, Path]:
    """``count`` finished runs in ``work/runs`` (with summaries) and ``work/runs-legacy`` (without); cached."""
    spec = {"runs": count, "version": VERSION}
    done = work / "runs-done.json"
    runs, legacy = work / "runs", work / "runs-legacy"
    if done.exists() and json.loads(done.read_text()) == spec:
        return runs, legacy
    for path in (runs, legacy):
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    print(f"generating {count:,} finished runs ...", flush=True)
    t = time.perf_counter()
    configs = config_texts(work)
    for i in range(count):
        write_run(runs, legacy, i, configs)
    done.write_text(json.dumps(spec))
    size = sum(f.stat().st_size for f in runs.glob("*/events.jsonl"))
    print(f"  {count:,} runs, {size / 1e6:.0f} MB of events, in {time.perf_counter() - t:.0f} s", flush=True)
    return runs, legacy


def newest_id(runs: Path) -> str:
    return max(p.name for p in runs.iterdir() if p.is_dir())
