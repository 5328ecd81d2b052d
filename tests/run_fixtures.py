"""Deterministic run folders for tests that must not depend on a real training run or on the clock.

``make_finished_run`` says what happened in a run and has tools/synthetic_runs.py write it in the public format
(docs/run-format.md): the same bytes on every machine and every day. Every time in it is fixed (``BASE_TIME`` = 2026-01-01 00:00:00 UTC
plus half a second per step), its status is final, and its pids are ones no live process can match (the
recorded start times are fixed too), so no reader takes it for a live run and nothing signals a process.
"""

from __future__ import annotations

import math
from pathlib import Path

from tools.synthetic_runs import write_checkpoint, write_finished_run
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.health.monitor import ADVICE
from trainer_core.contract.run.event_log import dumps
from trainer_core.contract.run.events import (
    Checkpoint,
    Error,
    Eval,
    Event,
    HealthWarning,
    Metrics,
    RunFinished,
    RunStarted,
    StopRequested,
    Summary,
    format_metrics_line,
)
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status

BASE_TIME = 1767225600.0  # 2026-01-01T00:00:00Z
STEP_SECONDS = 0.5
TOKENS_PER_STEP = 2048
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
SAVE_STEPS = 10
EXIT_REASONS = {
    Status.COMPLETED: None,
    Status.STOPPED: "stop file: grpo-tui stop",
    Status.FAILED: "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
}


def _r(value: float, digits: int = 6) -> float:
    return round(value, digits)


def step_time(step: int) -> float:
    return BASE_TIME + step * STEP_SECONDS


def kl_at(step: int, steps: int) -> float:
    """Slow growth, then a late climb well past 0.5 over the last quarter of the run."""
    late = max(0.0, step - 0.75 * steps)
    return _r(0.005 * step + 0.08 * late)


def metrics_at(step: int, steps: int, max_steps: int, kl_coef: float) -> Metrics:
    """The metrics event of ``step``: TRL's keys, values from closed forms (no randomness).

    The reward climbs faster in a shorter run, so two runs' curves differ on the compare screen.
    """
    reward = 0.1 + 0.8 * (1 - math.exp(-step / (0.375 * steps))) + 0.05 * math.sin(step * 0.9)
    values = {
        "loss": _r(0.05 * math.sin(step * 0.7) + (0.01 * kl_at(step, steps) if kl_coef else 0.0)),
        "grad_norm": _r(0.8 + 0.3 * math.cos(step * 0.5)),
        "learning_rate": _r(2e-3 * (1 - (step - 1) / max_steps), 9),
        "num_tokens": float(step * TOKENS_PER_STEP),
        "completions/mean_length": _r(40 + 20 * math.sin(step / 6)),
        "completions/clipped_ratio": _r(0.1 + 0.05 * math.cos(step / 4)),
        "rewards/score_episode/mean": _r(reward),
        "rewards/score_episode/std": _r(0.4 * math.exp(-step / 30)),
        "reward": _r(reward),
        "reward_std": _r(0.4 * math.exp(-step / 30) + 0.02 * math.cos(step)),
        "frac_reward_zero_std": _r(min(1.0, step / (2 * steps))),
        "entropy": _r(2.5 * math.exp(-step / 25) + 0.3),
        "clip_ratio/region_mean": _r(0.01 + 0.005 * math.sin(step / 3)),
        "step_time": STEP_SECONDS,
        "epoch": _r(step / max_steps, 4),
    }
    if kl_coef:
        values["kl"] = kl_at(step, steps)
    return Metrics(time=step_time(step), step=step, values=values)


def _warnings(steps: int, kl_coef: float) -> list[HealthWarning]:
    """A kl_explosion warn where the KL passes 0.5 (when KL is measured) and a critical mode_collapse near the end."""
    out = []
    if kl_coef:
        step = next((s for s in range(1, steps + 1) if kl_at(s, steps) > 0.5), steps)
        kls = [kl_at(s, steps) for s in range(max(1, step - 2), step + 1)]
        out.append(
            HealthWarning(
                "kl_explosion",
                Severity.WARN,
                step,
                f"KL to the reference model is {kls[-1]:.3g} (above 0.5 in 1 of the last 3 steps): "
                "the policy is drifting fast.",
                ADVICE["kl_explosion"],
                {"kl_last_steps": kls, "threshold": 0.5},
                time=step_time(step),
            )
        )
    step = max(1, steps - 2)
    m = metrics_at(step, steps, steps, kl_coef)
    out.append(
        HealthWarning(
            "mode_collapse",
            Severity.CRITICAL,
            step,
            f"Completions have become alike: reward_std {m.get('reward_std'):.3g} and entropy {m.get('entropy'):.3g} "
            f"(from 2.8) over the last 5 steps. GRPO gets no signal from groups whose completions score the same.",
            ADVICE["mode_collapse"],
            {"reward_std": [m.get("reward_std")], "entropy": [m.get("entropy")]},
            time=step_time(step),
        )
    )
    return out


def make_finished_run(
    runs_dir,
    run_id: str = "20260101-000000-abcdef",
    steps: int = 40,
    kl_coef: float = 0.1,
    with_warnings: bool = True,
    status: Status | str = Status.COMPLETED,
    *,
    max_steps: int | None = None,
    project: str = "grpo-run",
    model: str = MODEL,
    reward_spikes: dict[int, float] | None = None,
    name: str = "",
    tags: tuple[str, ...] = (),
    lr: float = 2e-3,
) -> Path:
    """Write a finished run (``completed``, ``stopped`` or ``failed``) that logged ``steps`` steps; return its path.

    ``max_steps`` (default ``steps``) is the configured length: a stopped or failed run usually ended before it.
    ``reward_spikes``: steps whose reward is replaced by the given value (a one-step outlier to chart).
    ``name``, ``tags``, ``lr``: the config's.
    """
    parsed = Status.parse(status)
    if parsed is None or not parsed.is_final:
        finals = [s.value for s in Status if s.is_final]
        raise ValueError(f"status must be one of {finals}, not {status!r}")
    status = parsed
    max_steps = max_steps or steps
    config = RunConfig(
        model=model,
        project_name=project,
        rl_env_module="examples/pattern_env.py",
        rl_env_class="PatternEnv",
        rl_kl_coef=kl_coef,
        rl_num_generations=4,
        batch_size=8,
        rl_max_new_tokens=12,
        lr=lr,
        max_steps=max_steps,
        save_steps=SAVE_STEPS,
        name=name,
        tags=list(tags),
    )
    checkpoints = list(range(SAVE_STEPS, steps + 1, SAVE_STEPS))
    if status is Status.STOPPED and steps not in checkpoints:
        checkpoints.append(steps)
    folder = write_finished_run(
        runs_dir,
        run_id,
        config,
        _events(run_id, steps, max_steps, kl_coef, with_warnings, status, project, model, reward_spikes or {}),
        log=_log(run_id, steps, max_steps, kl_coef, status, model),
        samples=_samples(steps),
        folders=[f"checkpoints/checkpoint-{step}" for step in checkpoints]
        + (["final"] if status is Status.COMPLETED else []),
    )
    return folder.path


def _events(
    run_id: str,
    steps: int,
    max_steps: int,
    kl_coef: float,
    with_warnings: bool,
    status: Status,
    project: str,
    model: str,
    reward_spikes: dict[int, float],
) -> list[Event]:
    """From run_started to run_finished, every event at a fixed time."""
    ended = step_time(steps) + 2.0
    events: list[Event] = [
        RunStarted(
            time=BASE_TIME,
            run_id=run_id,
            pid=999001,
            host="fixture-host",
            world_size=1,
            project_name=project,
            model=model,
            max_steps=max_steps,
        )
    ]
    warnings = _warnings(steps, kl_coef) if with_warnings else []
    for step in range(1, steps + 1):
        metrics = metrics_at(step, steps, max_steps, kl_coef)
        if step in reward_spikes:
            metrics.values["reward"] = reward_spikes[step]
        events.append(metrics)
        events.extend(w for w in warnings if w.step == step)
        if step % SAVE_STEPS == 0:
            events.append(Checkpoint(time=step_time(step) + 0.1, step=step, path=f"checkpoints/checkpoint-{step}"))
    if status is Status.COMPLETED:
        events.append(
            Summary(time=ended - 1.5, step=steps, values={"train_runtime": ended - BASE_TIME, "train_loss": 0.0123})
        )
        events.append(Checkpoint(time=ended - 1.0, step=steps, path="final", final=True))
    elif status is Status.STOPPED:
        events.append(StopRequested(time=ended - 1.8, reason=EXIT_REASONS[status], step=steps))
        if steps % SAVE_STEPS:
            events.append(Checkpoint(time=ended - 1.0, step=steps, path=f"checkpoints/checkpoint-{steps}"))
    else:
        events.append(
            Error(
                time=ended - 1.0,
                kind="exception",
                message=EXIT_REASONS[status],
                traceback='Traceback (most recent call last):\n  File "trainer_core/training/runner.py", line 183, '
                f"in _train\n    trainer.train()\ntorch.{EXIT_REASONS[status]}\n",
                step=steps,
            )
        )
    events.append(RunFinished(time=ended, status=status, reason=EXIT_REASONS[status], step=steps))
    return events


def _samples(steps: int) -> list[dict]:
    """Two completions of each of the last two steps."""
    return [
        {
            "step": step,
            "prompt": f"Continue the pattern: {' '.join('ab' * (i + 2))}",
            "completion": "a b a b a b" if i == 0 else "b a b a",
            "reward": _r(0.9 - 0.4 * i),
            "columns": {"pattern": "ab", "length": i + 2},
        }
        for step in range(max(1, steps - 1), steps + 1)
        for i in range(2)
    ]


def _log(run_id: str, steps: int, max_steps: int, kl_coef: float, status: Status, model: str) -> list[str]:
    """trainer.log: the start, a progress line every 10 steps, a failed run's traceback and the end."""
    log = [f"[grpo-tui] run {run_id}: loading {model}", "[grpo-tui] training: 1 process(es) on cpu"]
    for step in range(1, steps + 1):
        if step == 1 or step % 10 == 0 or step == steps:
            log.append(format_metrics_line(step, max_steps, metrics_at(step, steps, max_steps, kl_coef).values))
    if status is Status.FAILED:
        log += [
            "Traceback (most recent call last):",
            '  File "trainer_core/training/runner.py", line 183, in _train',
            "    trainer.train()",
            f"torch.{EXIT_REASONS['failed']}",
        ]
    log.append(f"[grpo-tui] run {status}" + (f": {EXIT_REASONS[status]}" if EXIT_REASONS[status] else ""))
    return log


def make_three_runs(runs_dir) -> list[Path]:
    """A completed, a stopped and a failed run, newest first as the runs list sorts them."""
    return [
        make_finished_run(
            runs_dir,
            "20260103-000000-cdef01",
            steps=12,
            status=Status.FAILED,
            max_steps=40,
            with_warnings=False,
            project="oom-test",
        ),
        make_finished_run(
            runs_dir,
            "20260102-000000-bcdef0",
            steps=25,
            status=Status.STOPPED,
            max_steps=40,
            kl_coef=0.0,
            project="no-kl",
        ),
        make_finished_run(runs_dir, "20260101-000000-abcdef", steps=40, status=Status.COMPLETED),
    ]


TASK_METRIC = "answer_is_sentence"


def eval_at(step: int, steps: int, engine: str | None = None) -> Eval:
    """The held-out eval of ``step`` in an eval run: the task metric rises to its peak at 40 % of the run, then
    falls below its baseline while the held-out reward keeps rising (the reward being gamed)."""
    peak = 0.4 * steps
    task = 0.3 + 0.4 * step / peak if step <= peak else 0.7 - 0.6 * (step - peak) / (steps - peak)
    reward = 0.2 + 0.7 * step / steps
    k = 4
    return Eval(
        time=step_time(step) + 0.05,
        step=step,
        metrics={
            TASK_METRIC: {"mean": _r(task), f"pass@{k}": _r(min(1.0, task + 0.2)), "std": 0.1},
            "reward": {"mean": _r(reward), f"pass@{k}": _r(min(1.0, reward + 0.05)), "std": 0.05},
        },
        task_metrics=[TASK_METRIC],
        prompts=16,
        generations=k,
        seconds=1.5,
        base=step == 0,
        train_reward=None if step == 0 else _r(reward - 0.02),
        engine=engine,
    )


def make_eval_run(runs_dir, run_id: str = "20260101-000000-e7a1ed", steps: int = 50, engine: str | None = None) -> Path:
    """A completed run with held-out evals at step 0 and every SAVE_STEPS, and complete checkpoints that record
    them (the ledger's best is the one at the task metric's peak, not the last)."""
    path = make_finished_run(runs_dir, run_id, steps=steps, with_warnings=False)
    events = (path / "events.jsonl").read_text().splitlines(keepends=True)
    evals = {s: eval_at(s, steps, engine) for s in (0, *range(SAVE_STEPS, steps + 1, SAVE_STEPS))}
    out = [events[0], dumps(evals[0].to_record()) + "\n"]
    for line in events[1:]:
        out.append(line)
        if '"type":"metrics"' in line.replace(" ", ""):
            step = int(line.split('"step":')[1].split(",")[0].split("}")[0])
            if step in evals and step:
                out.append(dumps(evals[step].to_record()) + "\n")
    (path / "events.jsonl").write_text("".join(out))
    for step in range(SAVE_STEPS, steps + 1, SAVE_STEPS):
        folder = path / "checkpoints" / f"checkpoint-{step}"
        folder.rmdir()
        write_checkpoint(path / "checkpoints", step, evals[step])
    (path / "final" / "config.json").write_text("{}")
    return path
