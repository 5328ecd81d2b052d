"""Detached runs with real processes and signals: hang-ups, kills, stops, stubborn trainers, reused pids."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from grpo_tui.api import RunHandle
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import Error, EventType, Metrics, RunFinished, RunStarted, StopRequested
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import marked, verified
from trainer_core.contract.run.status import Status

from ..helpers import ENVS, EXAMPLES, ROOT, cli, wait_for


def launch_args(model, runs_dir, *extra, env_module=str(EXAMPLES / "pattern_env.py"), env_class="PatternEnv"):
    return [
        "launch",
        "--json",
        "--model",
        model,
        "--rl-env-module",
        env_module,
        "--rl-env-class",
        env_class,
        "--rl-num-generations",
        "4",
        "--batch-size",
        "8",
        "--rl-max-new-tokens",
        "12",
        "--lr",
        "0.002",
        "--runs-dir",
        str(runs_dir),
        *extra,
    ]


def launch(model, runs_dir, *extra, **kw) -> RunHandle:
    result = cli(*launch_args(model, runs_dir, *extra, **kw))
    assert result.returncode == 0, result.stderr
    return RunHandle(RunFolder(Path(json.loads(result.stdout)["path"])))


def metrics_steps(handle):
    events = handle.events(EventType.METRICS)
    assert all(isinstance(e, Metrics) for e in events)
    return [e.step for e in events]


def wait_step(handle, step, timeout=120):
    wait_for(lambda: any(s >= step for s in metrics_steps(handle)), timeout=timeout)


def exited(pid, start_time=None) -> bool:
    """``pid`` is gone or a zombie; with ``start_time``, a new process that reuses the pid does not count."""
    if start_time is not None:
        return verified(pid, start_time) is None
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def assert_nothing_left(handle):
    """The run's processes are gone. A finished run's processes get a few seconds to exit: a process tearing
    down its memory no longer shows its environment (so it is not ``marked``) but is not a zombie yet."""
    wait_for(lambda: not marked(handle.path), timeout=30)
    state = handle.folder.read_state()
    for key, start in (("pid", "pid_start_time"), ("root_pid", "root_start_time")):
        pid, started = state.get(key), state.get(start)
        if pid:
            wait_for(lambda pid=pid, started=started: exited(pid, started), timeout=30)


def test_a_run_survives_hangup_and_kill_of_the_shell_that_launched_it(tiny_model, runs_dir, tmp_path):
    out = tmp_path / "launch.json"
    argv = " ".join(
        f"'{a}'" for a in [sys.executable, "-m", "grpo_tui", *launch_args(tiny_model, runs_dir, "--max-steps", "12")]
    )
    shell = subprocess.Popen(["bash", "-c", f"{argv} > '{out}'; sleep 600"], cwd=ROOT, start_new_session=True)
    wait_for(lambda: out.exists() and out.read_text().strip(), timeout=60)
    handle = RunHandle(RunFolder(Path(json.loads(out.read_text())["path"])))
    wait_step(handle, 1)
    os.killpg(shell.pid, signal.SIGHUP)
    os.killpg(shell.pid, signal.SIGKILL)
    shell.wait()
    assert handle.wait(timeout=180) is Status.COMPLETED
    assert metrics_steps(handle) == list(range(1, 13))
    assert_nothing_left(handle)


def test_the_root_is_detached_in_a_process_group_of_its_own_in_the_launchers_session(tiny_model, runs_dir):
    """Not a session of its own: Linux schedules each session as one task (autogroup), and a run alone in one
    stalls beside any busy process (process.detached_group); a group of its own is what keeps hangups away."""
    handle = launch(tiny_model, runs_dir, "--max-steps", "3")
    root = handle.folder.read_state()["root_pid"]
    assert os.getpgid(root) == root != os.getpgid(0)
    assert os.getsid(root) == os.getsid(0)  # the launcher (a child of this test) ran in this test's session
    assert handle.wait(timeout=180) is Status.COMPLETED


def test_killing_viewers_leaves_the_run_alone(tiny_model, runs_dir):
    handle = launch(tiny_model, runs_dir, "--max-steps", "10")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    viewers = [
        subprocess.Popen(
            [sys.executable, "-m", "grpo_tui", cmd, handle.run_id, "--runs-dir", str(runs_dir), *flags],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for cmd, flags in (("watch", []), ("logs", ["-f"]))
    ]
    wait_step(handle, 1)
    for viewer in viewers:
        viewer.send_signal(signal.SIGKILL)
        viewer.wait()
    assert handle.wait(timeout=180) is Status.COMPLETED
    assert metrics_steps(handle) == list(range(1, 11))


def test_stop_during_training_checkpoints_and_leaves_nothing(tiny_model, runs_dir):
    handle = launch(tiny_model, runs_dir, "--max-steps", "2000", "--save-steps", "1000")
    wait_step(handle, 2)
    result = cli("stop", handle.run_id[:12], "--runs-dir", str(runs_dir))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "stopped gracefully" in result.stdout and "no process of the run is left" in result.stdout
    assert "finishing the current step and saving a checkpoint" in result.stdout
    final = handle.events(EventType.RUN_FINISHED)[-1]
    assert isinstance(final, RunFinished) and final.status is Status.STOPPED and handle.status() is Status.STOPPED
    assert (handle.path / "checkpoints" / f"checkpoint-{final.step}" / "model.safetensors").exists()
    asked = handle.events(EventType.STOP_REQUESTED)  # who asked is recorded: the CLI
    assert asked and all(isinstance(e, StopRequested) and e.reason == "stop file: grpo-tui stop (CLI)" for e in asked)
    assert (
        "grpo-tui stop (CLI)" in (final.reason or "")
        and "grpo-tui stop (CLI)" in handle.folder.read_state()["exit_reason"]
    )
    assert_nothing_left(handle)
    again = cli("stop", handle.run_id, "--runs-dir", str(runs_dir))
    assert again.returncode == 0 and "is not running (status: stopped)" in again.stdout
    assert "finishing the current step" not in again.stdout  # nothing announced for a run that has ended


def test_a_trainer_ignoring_sigterm_is_killed_with_its_own_session_child(tiny_model, runs_dir, tmp_path):
    pid_file = tmp_path / "child.pid"
    handle = launch(
        tiny_model,
        runs_dir,
        "--max-steps",
        "50",
        "--rl-env-config",
        json.dumps({"child_pid_file": str(pid_file)}),
        env_module=str(ENVS / "stubborn_env.py"),
        env_class="Stubborn",
    )
    child = int(wait_for(lambda: pid_file.exists() and pid_file.read_text(), timeout=120))
    assert os.getsid(child) == child != os.getsid(handle.folder.read_state()["pid"])
    started = time.monotonic()
    result = cli("stop", handle.run_id, "--runs-dir", str(runs_dir), "--timeout", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert time.monotonic() - started < 60
    assert "forced to stop" in result.stdout and "no process of the run is left" in result.stdout
    assert exited(child)
    assert_nothing_left(handle)
    assert handle.status() is Status.STOPPED


def _fake_running_folder(runs_dir, pid, start_time) -> RunFolder:
    folder = RunFolder.create(runs_dir)
    (folder.config_file).write_text("project_name: p\nmodel: m\nmax_steps: 10\n")
    folder.write_state(
        run_id=folder.run_id,
        status="running",
        pid=pid,
        pid_start_time=start_time,
        root_pid=pid,
        root_start_time=start_time,
        started=time.time() - 60,
    )
    with EventWriter(folder.events_file) as writer:
        writer.emit(RunStarted(run_id=folder.run_id))
        writer.emit(Metrics(step=1, values={"reward": 0.25}))
    return folder


def test_a_reused_pid_is_never_signalled_and_the_run_is_lost(runs_dir):
    unrelated = subprocess.Popen(["sleep", "600"])
    try:
        real_start = psutil.Process(unrelated.pid).create_time()
        folder = _fake_running_folder(runs_dir, unrelated.pid, real_start - 3600)
        result = cli("stop", folder.run_id, "--runs-dir", str(runs_dir), "--force")
        assert result.returncode == 0 and "is not running" in result.stdout
        assert unrelated.poll() is None
        listed = json.loads(cli("runs", "--json", "--runs-dir", str(runs_dir)).stdout)
        assert [(r["run_id"], r["status"]) for r in listed] == [(folder.run_id, "lost")]
    finally:
        unrelated.kill()


def test_two_processes_launched_then_stopped_leave_nothing(tiny_model, runs_dir):
    handle = launch(tiny_model, runs_dir, "--max-steps", "2000", "--batch-size", "4", "--num-processes", "2")
    wait_step(handle, 2)
    state = handle.folder.read_state()
    assert "accelerate.commands.launch" in state["command"] and state["placement"]["num_processes"] == 2
    assert len([p for p in marked(handle.path) if "worker" in " ".join(p.cmdline())]) >= 3
    result = cli("stop", handle.run_id, "--runs-dir", str(runs_dir))
    assert result.returncode == 0, result.stdout + result.stderr
    assert handle.status() is Status.STOPPED
    assert len(handle.events(EventType.RUN_STARTED)) == 1 and len(handle.events(EventType.RUN_FINISHED)) == 1
    assert_nothing_left(handle)


def test_runs_json_reports_every_status(tiny_model, runs_dir):
    running = launch(tiny_model, runs_dir, "--max-steps", "2000")
    failed = launch(tiny_model, runs_dir, "--max-steps", "3", env_module=str(ENVS / "bad_envs.py"), env_class="Raises")
    completed = launch(tiny_model, runs_dir, "--max-steps", "2")
    lost = launch(tiny_model, runs_dir, "--max-steps", "2000")
    assert failed.wait(timeout=180) is Status.FAILED and completed.wait(timeout=180) is Status.COMPLETED
    wait_step(lost, 1)
    for proc in [psutil.Process(p.pid) for p in marked(lost.path)]:
        proc.kill()
    stopped = launch(tiny_model, runs_dir, "--max-steps", "2000")
    wait_step(stopped, 1)
    assert cli("stop", stopped.run_id, "--runs-dir", str(runs_dir)).returncode == 0
    wait_step(running, 1)
    listed = {r["run_id"]: r for r in json.loads(cli("runs", "--json", "--runs-dir", str(runs_dir)).stdout)}
    expected = {running: "running", failed: "failed", completed: "completed", lost: "lost", stopped: "stopped"}
    assert {h.run_id: listed[h.run_id]["status"] for h in expected} == {h.run_id: s for h, s in expected.items()}
    assert listed[completed.run_id]["step"] == 2 and listed[completed.run_id]["last_reward"] is not None
    cli("stop", running.run_id, "--runs-dir", str(runs_dir), "--force")
    assert_nothing_left(running)


def test_vllm_server_mode_places_starts_checks_and_stops_the_server(tiny_model, runs_dir, tmp_path):
    record = tmp_path / "server.json"
    env = {
        "GRPO_TUI_FAKE_GPUS": "3",
        "GRPO_TUI_VLLM_SERVE": str(ROOT / "tests" / "standins" / "fake_vllm_serve.py"),
        "FAKE_VLLM_RECORD": str(record),
    }
    result = cli(
        *launch_args(
            tiny_model,
            runs_dir,
            "--max-steps",
            "2",
            "--use-vllm",
            "--vllm-mode",
            "server",
            "--vllm-server-gpus",
            "1",
            "--gpus",
            "0,1,2",
            "--num-processes",
            "3",
        ),
        env=env,
    )
    assert result.returncode == 0, result.stderr
    handle = RunHandle(RunFolder(Path(json.loads(result.stdout)["path"])))
    handle.wait(timeout=180)
    server = json.loads(record.read_text())
    state = handle.folder.read_state()
    port = state["vllm_server"]["port"]
    assert server["argv"] == [
        "--model",
        tiny_model,
        "--tensor-parallel-size",
        "1",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    assert server["cuda_visible_devices"] == "0"
    assert state["placement"] == {"train_gpus": [1, 2], "server_gpus": [0], "num_processes": 2}
    assert "request /health/" in (handle.path / "vllm_server.log").read_text()
    assert_nothing_left(handle)
    wait_for(lambda: exited(server["pid"]), timeout=30)
    error = handle.events(EventType.ERROR)[0]
    assert isinstance(error, Error) and "vLLM" in error.message  # this machine has no vLLM: the trainer says so


def test_an_unhealthy_vllm_server_fails_the_run_with_its_log(tiny_model, runs_dir, tmp_path):
    env = {
        "GRPO_TUI_FAKE_GPUS": "2",
        "GRPO_TUI_VLLM_SERVE": str(ROOT / "tests" / "standins" / "fake_vllm_serve.py"),
        "FAKE_VLLM_RECORD": str(tmp_path / "s.json"),
        "FAKE_VLLM_UNHEALTHY": "1",
    }
    result = cli(
        *launch_args(tiny_model, runs_dir, "--use-vllm", "--vllm-mode", "server", "--vllm-timeout", "3"), env=env
    )
    handle = RunHandle(RunFolder(Path(json.loads(result.stdout)["path"])))
    assert handle.wait(timeout=60) is Status.FAILED
    error = handle.events(EventType.ERROR)[0]
    assert isinstance(error, Error) and "not healthy" in error.message and "fake vllm serving" in error.message
    assert_nothing_left(handle)


@pytest.mark.parametrize(
    "gpus,fake,message",
    [
        ("5", "2", "GPU 5 does not exist; this machine has GPUs 0, 1"),
        ("0", None, "this machine has none"),
        ("0,0", "2", "lists a GPU twice"),
    ],
)
def test_bad_gpu_choices_are_refused_before_anything_starts(tiny_model, runs_dir, gpus, fake, message):
    env = {"GRPO_TUI_FAKE_GPUS": fake} if fake else {}
    result = cli(*launch_args(tiny_model, runs_dir, "--gpus", gpus), env=env)
    assert result.returncode == 2 and message in result.stderr
    assert not runs_dir.exists()


def test_server_mode_without_enough_gpus_is_refused(tiny_model, runs_dir):
    result = cli(
        *launch_args(tiny_model, runs_dir, "--use-vllm", "--vllm-mode", "server", "--gpus", "0"),
        env={"GRPO_TUI_FAKE_GPUS": "2"},
    )
    assert result.returncode == 2 and "needs 1 GPU(s) for the server and at least 1 to train" in result.stderr


def test_a_taken_port_is_refused(tiny_model, runs_dir):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        result = cli(
            *launch_args(tiny_model, runs_dir, "--use-vllm", "--vllm-mode", "server", "--vllm-port", str(port)),
            # the stand-in server: without it, the missing vLLM is refused first (the hardware pre-flight)
            env={
                "GRPO_TUI_FAKE_GPUS": "2",
                "GRPO_TUI_VLLM_SERVE": str(ROOT / "tests" / "standins" / "fake_vllm_serve.py"),
            },
        )
    assert result.returncode == 2 and f"port {port} on 127.0.0.1 is already taken" in result.stderr


def test_unknown_run_and_unwritable_runs_dir(tiny_model, runs_dir, tmp_path):
    folder = RunFolder.create(runs_dir)
    (folder.config_file).write_text("model: m\n")
    typo = folder.run_id[:-1] + ("x" if folder.run_id[-1] != "x" else "y")
    result = cli("stop", typo, "--runs-dir", str(runs_dir))
    assert result.returncode == 2 and folder.run_id in result.stderr
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = cli(*launch_args(tiny_model, blocker / "runs"))
    assert result.returncode == 2 and "cannot create a run folder" in result.stderr
