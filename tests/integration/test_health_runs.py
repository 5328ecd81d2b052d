"""Health rules on real runs of the tiny model: the trainer writes the warnings, --stop-on acts on them,
and watchers see stalls and crash causes."""

from __future__ import annotations

import json
import os
import signal

from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.health.core import Thresholds
from trainer_core.contract.run.event_log import EventWriter, read_events
from trainer_core.contract.run.events import Error, HealthWarning, Metrics
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status
from trainer_core.training.runner import train

from ..helpers import ENVS, EXAMPLES, cli, wait_for
from .test_supervisor import launch, wait_step

COLLAPSE_RULES = {"mode_collapse", "entropy_collapse"}


def pattern_run(tiny_model, runs_dir, lr, steps, **extra):
    settings = dict(rl_num_generations=4, batch_size=8, rl_max_new_tokens=16, rl_kl_coef=0.1, save_steps=1000)
    config = RunConfig(
        model=tiny_model,
        rl_env_module=str(EXAMPLES / "pattern_env.py"),
        rl_env_class="PatternEnv",
        lr=lr,
        max_steps=steps,
        **{**settings, **extra},
    )
    result = train(config, runs_dir=runs_dir)
    events = read_events(result.path / "events.jsonl")
    return result, [e for e in events if isinstance(e, Metrics)], [e for e in events if isinstance(e, HealthWarning)]


def test_kl_explosion_fires_within_three_steps_of_kl_crossing(tiny_model, runs_dir):
    _, metrics, warnings = pattern_run(tiny_model, runs_dir, lr=1e-2, steps=40)
    crossed = next(m.step for m in metrics if (m.get("kl") or 0) > 0.5)
    fired = [w for w in warnings if w.rule == "kl_explosion"]
    assert fired and crossed <= fired[0].step <= crossed + 3
    assert fired[0].advice.startswith("Lower --lr") and fired[0].evidence["kl_last_steps"][-1] > 0.5


def test_a_high_learning_rate_collapses_and_is_caught(tiny_model, runs_dir):
    _, metrics, warnings = pattern_run(tiny_model, runs_dir, lr=5e-2, steps=40)
    assert min(m.get("entropy") for m in metrics) < 0.6 * metrics[0].get("entropy")
    assert COLLAPSE_RULES & {w.rule for w in warnings}


def test_constant_rewards_raise_no_learning_signal_within_five_steps(tiny_model, runs_dir):
    config = RunConfig(
        model=tiny_model,
        rl_env_module=str(EXAMPLES / "constant_env.py"),
        rl_env_class="ConstantEnv",
        rl_num_generations=4,
        batch_size=8,
        rl_max_new_tokens=8,
        max_steps=6,
        save_steps=1000,
    )
    result = train(config, runs_dir=runs_dir)
    fired = [
        e
        for e in read_events(result.path / "events.jsonl")
        if isinstance(e, HealthWarning) and e.rule == "no_learning_signal"
    ]
    assert fired and fired[0].step <= 5 and fired[0].severity is Severity.WARN


def test_a_healthy_run_raises_no_kl_or_collapse_warning(tiny_model, runs_dir):
    _, metrics, warnings = pattern_run(tiny_model, runs_dir, lr=2e-3, steps=20)
    assert max(m.get("kl") for m in metrics) < 0.5 * Thresholds().kl_high  # well clear of kl_explosion
    assert metrics[-1].get("reward") > metrics[0].get("reward")
    bad = [w for w in warnings if w.rule in COLLAPSE_RULES | {"kl_explosion", "non_finite"} and w.severity.alarming]
    assert bad == []


def test_kl_not_measured_is_said_plainly(tiny_model, runs_dir):
    _, metrics, warnings = pattern_run(tiny_model, runs_dir, lr=2e-3, steps=2, rl_kl_coef=0.0)
    assert "kl" not in metrics[0].values
    assert [(w.rule, w.severity, w.step) for w in warnings][:1] == [("kl_not_measured", Severity.INFO, 0)]


def test_stop_on_kl_explosion_stops_with_a_checkpoint(tiny_model, runs_dir):
    result, metrics, warnings = pattern_run(tiny_model, runs_dir, lr=5e-2, steps=60, stop_on="kl_explosion")
    assert result.status == Status.STOPPED and result.reason.startswith("auto-stop: kl_explosion at step")
    fired = next(w for w in warnings if w.rule == "kl_explosion")
    assert metrics[-1].step <= fired.step + 1 < 60
    assert (result.path / "checkpoints" / f"checkpoint-{metrics[-1].step}").is_dir()
    state = json.loads((result.path / "state.json").read_text())
    assert state["status"] == "stopped"


def test_a_paused_trainer_is_reported_as_stalled(tiny_model, runs_dir):
    handle = launch(
        tiny_model, runs_dir, "--max-steps", "2000", "--health", "stall_min_seconds=2", "--health", "stall_factor=3"
    )
    wait_step(handle, 4)
    pid = handle.folder.read_state()["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:

        def stalled():
            runs = json.loads(cli("runs", "--json", "--runs-dir", str(runs_dir)).stdout)
            return [a for a in runs[0]["alerts"] if a["rule"] == "stall"]

        alert = wait_for(stalled, timeout=30, interval=0.5)[0]
        evidence = alert["evidence"]  # rounded to 0.1 s: a wait just past the limit can show as equal to it
        assert (
            alert["severity"] in ("warn", "critical")
            and evidence["seconds_since_last_step"] >= evidence["limit_seconds"] >= 2
        )
        shown = cli("watch", handle.run_id, "--once", "--runs-dir", str(runs_dir), timeout=30)
    finally:
        os.kill(pid, signal.SIGCONT)
        cli("stop", handle.run_id, "--runs-dir", str(runs_dir), "--force")
    assert "stall" in shown.stdout


def test_an_out_of_memory_crash_is_classified(tiny_model, runs_dir):
    handle = launch(
        tiny_model, runs_dir, "--max-steps", "3", env_module=str(ENVS / "bad_envs.py"), env_class="OutOfMemory"
    )
    assert handle.wait(timeout=120) is Status.FAILED
    run = json.loads(cli("runs", "--json", "--runs-dir", str(runs_dir)).stdout)[0]
    assert run["alerts"][0]["rule"] == "crash_oom" and "gradient-checkpointing" in run["alerts"][0]["advice"]
    assert run["last_warning"] == "crash_oom"


def test_a_planted_oom_line_in_the_log_is_classified(runs_dir):
    folder = RunFolder.create(runs_dir)
    folder.config_file.write_text("model: m\n")
    folder.write_state(status="failed", started=1.0, ended=2.0)
    folder.log_file.write_text("step 7\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    with EventWriter(folder.events_file) as w:
        w.emit(Error(kind="trainer_exit", message="the trainer exited with code 1", step=7))
    run = json.loads(cli("runs", "--json", "--runs-dir", str(runs_dir)).stdout)[0]
    assert [a["rule"] for a in run["alerts"]] == ["crash_oom"]
    assert "CUDA out of memory" in run["alerts"][0]["evidence"]["log_line"]
