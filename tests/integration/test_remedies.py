"""Remedies: a run whose KL explodes rolls itself back and goes on with safer settings, with nobody watching.

Real training of the pre-trained tiny model through the CLI (its run's root carries the remedy out): the KL demo
with ``--remedy`` recovers and finishes, telling the story and sending the rollback to an alert receiver on
127.0.0.1; a remedy that does not help (``--remedy-lr-scale 1``) rolls back at most ``--max-remedies`` times and
then stops the run, saying the remedies were spent; a held-out divergence goes back to the checkpoint best on the
held-out metric."""

from __future__ import annotations

import json

import pytest

from grpo_tui.cli.demo import REMEDY
from trainer_core.contract.alerts.targets import SETTINGS_ENV
from trainer_core.contract.run.events import Eval, HealthWarning, Metrics, Rewound, RunFinished
from trainer_core.contract.run.rewinds import live
from trainer_core.contract.run.status import Status

from ..helpers import ENVS, ROOT, cli, events_of, only_run, pattern_args
from .test_notify import Receiver

KL_HIGH = 0.5  # the kl_explosion rule's default threshold (health/core.py)
DEMO = ROOT / "grpo_tui" / "resources" / "demo"


@pytest.fixture(scope="module")
def receiver():
    server = Receiver()
    yield server
    server.server.shutdown()


def cached(model: str, tmp_path) -> dict[str, str]:
    """The demo's cached model is the pre-trained tiny one: nothing to build."""
    cache = tmp_path / "cache"
    (cache / "grpo-tui").mkdir(parents=True)
    (cache / "grpo-tui" / "tiny-model").symlink_to(model)
    return {"XDG_CACHE_HOME": str(cache)}


def notify_settings(tmp_path, url: str) -> dict[str, str]:
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"notify:\n  - {url}\nnotify_severity: info\n")
    settings.chmod(0o600)
    return {SETTINGS_ENV: str(settings)}


def test_the_kl_demo_with_a_remedy_rolls_back_and_finishes_healthy(pretrained_tiny_model, receiver, tmp_path):
    runs = tmp_path / "runs"
    env = {**cached(pretrained_tiny_model, tmp_path), **notify_settings(tmp_path, receiver.url("/remedy"))}
    result = cli("demo", "--pathology", "kl", "--remedy", "--runs-dir", str(runs), env=env, timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    folder = only_run(runs)
    events = events_of(folder)

    warned = next(e for e in events if isinstance(e, HealthWarning) and e.rule == "kl_explosion")
    (rewind,) = [e for e in events if isinstance(e, Rewound)]
    assert str(rewind.by) == "rule" and rewind.rule == "kl_explosion"
    assert rewind.to_step < warned.step < rewind.from_step + 1  # back to before the explosion
    scaled = 1e-2 * REMEDY["remedy_lr_scale"]
    assert rewind.changes == {"lr": {"from": 1e-2, "to": pytest.approx(scaled)}} and rewind.revision == 1

    after = [e for e in live(events) if isinstance(e, Metrics) and e.time >= rewind.time]
    assert after and all(e.values["learning_rate"] == pytest.approx(scaled) for e in after)  # a constant schedule
    last_kl = [e.values["kl"] for e in after[-10:]]
    assert max(last_kl) < KL_HIGH, last_kl
    assert isinstance(events[-1], RunFinished) and events[-1].status is Status.COMPLETED
    assert events[-1].step == 120
    evals = [e for e in live(events) if isinstance(e, Eval)]
    assert evals[-1].step == 120 and evals[-1].value("wrote_target") > evals[0].value("wrote_target")

    # the story, piped: the warning, the rollback and how it went on, and no "not a success"
    assert f"warning kl_explosion step {warned.step}" in result.stdout
    told = f"recovered: the kl_explosion remedy took the run back from step {rewind.from_step} to {rewind.checkpoint}"
    assert told in result.stdout and "lr 0.01 -> " in result.stdout and "not a success" not in result.stdout

    bodies = receiver.bodies("/remedy")
    kinds = [b["event"] for b in bodies]
    assert "rollback" in kinds and kinds[-1] == "run_end" and bodies[-1]["status"] == "completed", kinds
    rollback = next(b for b in bodies if b["event"] == "rollback")
    assert rollback["rule"] == "kl_explosion" and rollback["step"] == rewind.to_step
    assert f"from step {rewind.from_step}" in rollback["message"] and "lr" in rollback["message"]
    assert not [b for b in bodies if b["event"] == "run_end" and b["status"] == "stopped"]  # the leg's end is no news


def test_a_remedy_that_does_not_help_rolls_back_at_most_max_remedies_times_then_stops(pretrained_tiny_model, tmp_path):
    runs = tmp_path / "runs"
    result = cli(
        "train",
        "--config",
        str(DEMO / "cpu_demo.yaml"),
        "--model",
        pretrained_tiny_model,
        "--rl-env-module",
        str(DEMO / "pattern_env.py"),
        "--lr",
        "1e-2",
        "--remedy",
        "kl_explosion=rollback",
        "--remedy-lr-scale",
        "1",
        "--max-remedies",
        "1",
        "--max-steps",
        "40",
        "--runs-dir",
        str(runs),
        timeout=900,
    )
    assert result.returncode == 3, result.stdout[-3000:] + result.stderr[-3000:]  # the exit code of a stopped run
    events = events_of(only_run(runs))
    rewinds = [e for e in events if isinstance(e, Rewound)]
    assert len(rewinds) == 1 and rewinds[0].changes == {}  # a scale of 1 changes nothing
    warnings = [
        e for e in events if isinstance(e, HealthWarning) and e.rule == "kl_explosion" and e.time > rewinds[0].time
    ]
    end = events[-1]
    assert isinstance(end, RunFinished) and end.status is Status.STOPPED and warnings
    assert end.reason.startswith(f"auto-stop: kl_explosion at step {warnings[0].step}: the remedies were spent")
    assert "1 rollback of at most 1 (--max-remedies)" in end.reason


def test_a_held_out_divergence_rolls_back_to_the_checkpoint_best_on_the_held_out_metric(tiny_model, tmp_path):
    """The held-out metric (scripted per eval: 0.2 at the base model, 0.8 at step 10, 0.6, then 0.1 at step 30)
    falls while the reward is learned: the remedy goes back to checkpoint-10, the best held out, not to the
    newest checkpoint (30), and the run goes on to its end."""
    runs = tmp_path / "runs"
    env_config = json.dumps({"count_file": str(tmp_path / "evals.json"), "eval_prompts": 4, "per_eval": 8})
    result = cli(
        *pattern_args(tiny_model, runs),
        "--rl-env-module",
        str(ENVS / "scripted_heldout_env.py"),
        "--rl-env-class",
        "ScriptedHeldOutEnv",
        "--rl-env-config",
        env_config,
        "--eval-steps",
        "10",
        "--eval-generations",
        "2",
        "--eval-max-prompts",
        "4",
        "--save-steps",
        "10",
        "--max-steps",
        "40",
        "--health",
        "divergence_reward_rise=0.001",
        "--remedy",
        "reward_task_divergence=rollback",
        "--max-remedies",
        "1",
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    events = events_of(only_run(runs))
    fired = next(e for e in events if isinstance(e, HealthWarning) and e.rule == "reward_task_divergence")
    assert fired.step == 30 and str(fired.severity) == "critical"
    (rewind,) = [e for e in events if isinstance(e, Rewound)]
    assert (rewind.checkpoint, rewind.to_step, rewind.rule, str(rewind.by)) == (
        "checkpoint-10",
        10,
        "reward_task_divergence",
        "rule",
    )
    assert rewind.from_step >= 30 and "best held-out scripted_task" in (rewind.reason or "")
    assert isinstance(events[-1], RunFinished) and events[-1].status is Status.COMPLETED and events[-1].step == 40
    evals = [e for e in live(events) if isinstance(e, Eval)]
    assert [e.step for e in evals] == [0, 10, 20, 30, 40]
