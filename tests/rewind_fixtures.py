"""A deterministic run folder with a rewind, for the tests of every reader of the live history (run/rewinds.py).

The first leg logs steps 1-38 with checkpoints at 10, 20 and 30 and held-out evals at 0, 10, 20 and 30 (the task
metric peaks at 30); its KL climbs past 0.5 from step 32 and a critical ``kl_explosion`` warning fires at 34.
A ``rewound`` event (by a rule, the KL coefficient raised, revision 1) takes the run back to checkpoint-20, and the
second leg logs steps 21-28 calmly (a lower learning rate, a low KL, a reward offset by ``LEG2_REWARD``), evaluates
step 28 below the peak and completes. Live: steps 1-20 of the first leg, then 21-28 of the second; abandoned:
steps 21-38 of the first, its warning, its eval and checkpoint of step 30 (which is still the best), and its
samples of those steps.
"""

from __future__ import annotations

from pathlib import Path

from tests.run_fixtures import BASE_TIME, MODEL, TASK_METRIC, eval_at, metrics_at, step_time
from tools.synthetic_runs import write_checkpoint, write_finished_run
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import (
    Checkpoint,
    Eval,
    Event,
    HealthWarning,
    Metrics,
    Rewound,
    RunFinished,
    RunStarted,
    Summary,
    warning,
)
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status

RUN_ID = "20260105-000000-5e1f00"
FIRST_LEG = 38
TO_STEP = 20
LAST_STEP = 28
EVAL_STEPS = 75  # the eval curve's length: its task metric peaks at 40 % of it, step 30
LEG2_REWARD = 5.0  # added to the second leg's reward, so a reader that mixes the legs shows it
LEG2_KL = 0.01
WARNING_STEP = 34
LEG2_START = step_time(FIRST_LEG) + 100.0  # the second leg starts 100 s after the first ended


def leg1_kl(step: int) -> float:
    return round(0.02 if step < 32 else 0.4 + 0.3 * (step - 31), 6)


def _leg1(step: int) -> Metrics:
    metrics = metrics_at(step, FIRST_LEG, FIRST_LEG, 0.1)
    return Metrics(time=metrics.time, step=step, values={**metrics.values, "kl": leg1_kl(step)})


def _leg2(step: int) -> Metrics:
    metrics = metrics_at(step, FIRST_LEG, FIRST_LEG, 0.1)
    values = {**metrics.values, "kl": LEG2_KL, "reward": metrics.values["reward"] + LEG2_REWARD}
    values["learning_rate"] = values["learning_rate"] / 2
    return Metrics(time=LEG2_START + (step - TO_STEP) * 0.5, step=step, values=values)


def _eval(step: int, time: float | None = None) -> Eval:
    found = eval_at(step, EVAL_STEPS)
    if step == LAST_STEP:  # the second leg's eval scores below the abandoned peak at 30
        found = Eval(**{**found.__dict__, "metrics": {**found.metrics, TASK_METRIC: {"mean": 0.35, "std": 0.1}}})
    return found if time is None else Eval(**{**found.__dict__, "time": time})


def kl_warning() -> HealthWarning:
    found = warning(
        HealthRule.KL_EXPLOSION,
        Severity.CRITICAL,
        WARNING_STEP,
        "KL to the reference model is 1.3: the policy is drifting fast.",
        {"kl_last_steps": [leg1_kl(s) for s in range(WARNING_STEP - 2, WARNING_STEP + 1)]},
    )
    return HealthWarning(**{**found.__dict__, "time": step_time(WARNING_STEP) + 0.01})


def rewind() -> Rewound:
    return Rewound(
        time=LEG2_START - 1.0,
        from_step=FIRST_LEG,
        to_step=TO_STEP,
        checkpoint=f"checkpoint-{TO_STEP}",
        reason="kl_explosion at step 34",
        by="rule",
        rule="kl_explosion",
        changes={"rl_kl_coef": {"from": 0.1, "to": 0.2}},
        revision=1,
    )


def events() -> list[Event]:
    started = RunStarted(
        time=BASE_TIME,
        run_id=RUN_ID,
        pid=999101,
        host="fixture-host",
        project_name="recovered",
        model=MODEL,
        max_steps=FIRST_LEG,
    )
    out: list[Event] = [started, _eval(0, BASE_TIME + 0.01)]
    for step in range(1, FIRST_LEG + 1):
        out.append(_leg1(step))
        if step % 10 == 0:
            out.append(_eval(step, step_time(step) + 0.05))
            out.append(Checkpoint(time=step_time(step) + 0.1, step=step, path=f"checkpoints/checkpoint-{step}"))
        if step == WARNING_STEP:
            out.append(kl_warning())
    out.append(RunFinished(time=step_time(FIRST_LEG) + 1, status=Status.STOPPED, reason="remedy", step=FIRST_LEG))
    out.append(rewind())
    out.append(
        RunStarted(
            time=LEG2_START,
            run_id=RUN_ID,
            pid=999102,
            host="fixture-host",
            project_name="recovered",
            model=MODEL,
            max_steps=LAST_STEP,
            resumed_from=f"checkpoints/checkpoint-{TO_STEP}",
            restart=1,
            revision=1,
            changes={"rl_kl_coef": {"from": 0.1, "to": 0.2}},
        )
    )
    for step in range(TO_STEP + 1, LAST_STEP + 1):
        out.append(_leg2(step))
    end = LEG2_START + (LAST_STEP - TO_STEP) * 0.5
    out.append(_eval(LAST_STEP, end + 0.05))
    out.append(Summary(time=end + 0.5, step=LAST_STEP, values={"train_runtime": 30.0, "train_loss": 0.01}))
    out.append(Checkpoint(time=end + 1.0, step=LAST_STEP, path="final", final=True))
    out.append(RunFinished(time=end + 2.0, status=Status.COMPLETED, reason=None, step=LAST_STEP))
    return out


def samples() -> list[dict]:
    """Two completions per step: the first leg's of steps 15-38 (``leg 1``), then the second leg's of 21-28."""
    return [
        {"step": step, "prompt": f"p{step}", "completion": f"{leg} {i}", "reward": 0.5, "columns": {}}
        for leg, steps in (("leg 1", range(15, FIRST_LEG + 1)), ("leg 2", range(TO_STEP + 1, LAST_STEP + 1)))
        for step in steps
        for i in range(2)
    ]


def make_rewound_run(runs_dir, run_id: str = RUN_ID, *, with_summary: bool = False) -> Path:
    """Write the run (its checkpoints complete, each with the eval of its step); ``with_summary``: store the
    summary of its end in state.json, as ``RunFolder.record_end`` does."""
    config = RunConfig(
        model=MODEL,
        project_name="recovered",
        rl_env_module="examples/pattern_env.py",
        rl_env_class="PatternEnv",
        rl_kl_coef=0.2,
        max_steps=LAST_STEP,
        save_steps=10,
    )
    written = events()
    folder = write_finished_run(
        runs_dir,
        run_id,
        config,
        written,
        samples=samples(),
        summary_config=config.to_dict() if with_summary else None,
    )
    evals = {e.step: e for e in written if isinstance(e, Eval)}
    for step in (10, 20, 30):
        write_checkpoint(folder.checkpoints_dir, step, evals[step])
    (folder.path / "final").mkdir()
    (folder.path / "final" / "config.json").write_text("{}")
    return folder.path
