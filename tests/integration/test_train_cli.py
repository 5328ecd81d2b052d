"""Real GRPO training on the tiny model through ``grpo-tui train``: the run folder, stops, repeats, 2 ranks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import yaml

from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import Checkpoint, Metrics, RunFinished, RunStarted, StopRequested
from trainer_core.contract.run.process import process_matches
from trainer_core.contract.run.status import Status

from ..helpers import ROOT, cli, events_of, only_run, pattern_args, scaled, wait_for


def metrics(events) -> list[Metrics]:
    return [e for e in events if isinstance(e, Metrics)]


def of_type(events, cls) -> list:
    return [e for e in events if isinstance(e, cls)]


def test_train_writes_a_complete_run_folder(tiny_model, runs_dir):
    result = cli(*pattern_args(tiny_model, runs_dir, "--max-steps", "5", "--save-steps", "3"))
    assert result.returncode == 0, result.stderr + result.stdout
    run = only_run(runs_dir)
    events = events_of(run)  # every line parses, as an event of a known type
    assert isinstance(events[0], RunStarted) and events[0].type == "run_started"
    assert isinstance(events[-1], RunFinished) and events[-1].status is Status.COMPLETED
    steps = metrics(events)
    assert [m.step for m in steps] == [1, 2, 3, 4, 5]
    for m in steps:
        assert {
            "reward",
            "reward_std",
            "kl",
            "loss",
            "entropy",
            "completions/mean_length",
            "rewards/score_episode/mean",
        } <= set(m.values)
        assert isinstance(m.time, float)
    assert [e.step for e in of_type(events, Checkpoint)] == [3, 5, 5]
    assert (run / "checkpoints" / "checkpoint-3").is_dir() and (run / "final" / "config.json").exists()
    state = json.loads((run / "state.json").read_text())
    assert state["status"] == "completed" and state["last_step"] == 5 and state["ended"] >= state["started"]
    assert state["run_id"] == run.name and state["host"]
    assert (run / "trainer.log").exists() and (run / "samples.jsonl").stat().st_size > 0
    assert "step 5/5" in result.stdout and "run completed" in result.stdout
    assert oct(run.stat().st_mode & 0o777) == "0o700"


def test_config_yaml_repeats_the_run(tiny_model, runs_dir, tmp_path):
    assert (
        cli(*pattern_args(tiny_model, runs_dir, "--max-steps", "2", "--rl-env-config", '{"target": "b"}')).returncode
        == 0
    )
    first = only_run(runs_dir)
    again = tmp_path / "again"
    result = cli("train", "--config", str(first / "config.yaml"), "--runs-dir", str(again))
    assert result.returncode == 0, result.stderr
    second = only_run(again)
    assert yaml.safe_load((first / "config.yaml").read_text()) == yaml.safe_load((second / "config.yaml").read_text())
    assert RunConfig.load(second / "config.yaml").rl_env_config == {"target": "b"}
    assert [m.step for m in metrics(events_of(second))] == [1, 2]


def _start(tiny_model, runs_dir, *extra):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "grpo_tui", *pattern_args(tiny_model, runs_dir, *extra)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_for_step(runs_dir, step):
    def reached():
        runs = list(runs_dir.glob("*/events.jsonl")) if runs_dir.exists() else []
        return runs and any(m.step >= step for m in metrics(events_of(runs[0].parent)))

    wait_for(reached, timeout=120)
    return only_run(runs_dir)


def test_sigterm_to_the_trainer_stops_with_a_checkpoint(tiny_model, runs_dir):
    proc = _start(tiny_model, runs_dir, "--max-steps", "2000", "--save-steps", "1000")
    run = _wait_for_step(runs_dir, 2)
    trainer_pid = json.loads((run / "state.json").read_text())["pid"]
    assert trainer_pid != proc.pid
    os.kill(trainer_pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 3, out
    events = events_of(run)
    stop = of_type(events, StopRequested)
    assert len(stop) == 1 and stop[0].reason == "SIGTERM received"
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is Status.STOPPED
    assert final.step < 2000
    assert (run / "checkpoints" / f"checkpoint-{final.step}" / "model.safetensors").exists()
    assert [e.step for e in of_type(events, Checkpoint)] == [final.step]
    state = json.loads((run / "state.json").read_text())
    assert state["status"] == "stopped" and state["exit_reason"] == "SIGTERM received"
    assert not process_matches(state["pid"], state["pid_start_time"])
    assert "stop requested" in out and "run stopped" in out


def test_sigterm_to_the_command_and_a_second_one_forces(tiny_model, runs_dir):
    proc = _start(tiny_model, runs_dir, "--max-steps", "2000", "--save-steps", "1000")
    run = _wait_for_step(runs_dir, 1)
    proc.send_signal(signal.SIGTERM)
    wait_for(lambda: of_type(events_of(run), StopRequested), timeout=60)
    trainer_pid = json.loads((run / "state.json").read_text())["pid"]
    os.kill(trainer_pid, signal.SIGTERM)
    os.kill(trainer_pid, signal.SIGTERM)
    proc.communicate(timeout=scaled(180))  # the root records the end, then exits: minutes on a loaded machine
    final = events_of(run)[-1]
    assert isinstance(final, RunFinished) and final.status is Status.STOPPED
    assert json.loads((run / "state.json").read_text())["status"] == "stopped"


def test_two_cpu_processes_write_one_stream(tiny_model, runs_dir):
    result = cli(*pattern_args(tiny_model, runs_dir, "--max-steps", "3", "--batch-size", "4", "--num-processes", "2"))
    assert result.returncode == 0, (
        result.stdout + result.stderr + (only_run(runs_dir) / "trainer.log").read_text()[-3000:]
    )
    run = only_run(runs_dir)
    events = events_of(run)
    assert [e.type for e in events].count("run_started") == 1
    assert isinstance(events[0], RunStarted) and events[0].world_size == 2
    assert [m.step for m in metrics(events)] == [1, 2, 3]
    assert [e.type for e in events].count("run_finished") == 1
    assert list(runs_dir.iterdir()) == [run]


def test_two_processes_stop_in_the_same_step(tiny_model, runs_dir):
    proc = _start(tiny_model, runs_dir, "--max-steps", "2000", "--batch-size", "4", "--num-processes", "2")
    run = _wait_for_step(runs_dir, 2)
    (run / "stop_request").write_text('{"reason": "test"}\n')
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 3, out + (run / "trainer.log").read_text()[-3000:]
    final = events_of(run)[-1]
    assert isinstance(final, RunFinished) and final.status is Status.STOPPED and "stop file: test" in final.reason
    assert (run / "checkpoints" / f"checkpoint-{final.step}").is_dir()
