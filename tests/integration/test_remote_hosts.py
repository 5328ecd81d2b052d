"""Runs on another machine through ``--host``: a real sshd on 127.0.0.1 is the remote, its grpo-tui this one."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from tests.helpers import ROOT, events_of, wait_for
from tests.remote_hosts import remote, sshd  # noqa: F401
from trainer_core.contract.run.folder import FORMAT_VERSION

pytestmark = pytest.mark.slow


def steps_in(events) -> list[int]:
    return [e.step for e in events if type(e).__name__ == "Metrics"]


def test_launch_list_watch_logs_and_stop_a_run_on_a_host(remote, tiny_model):  # noqa: F811
    run_id = remote.launch(tiny_model, "--max-steps", "2000", "--save-steps", "1000", "--project-name", "far away")
    folder = remote.run_folder(run_id)
    assert folder.is_dir() and (folder.stat().st_mode & 0o777) == 0o700

    connection = set(remote.server.connection_pids())
    assert connection, "the launch left its shared connection up"
    listed = remote.cli("runs", "--host", "gpubox", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["run_id"], r["host"], r["project"]) for r in rows] == [(run_id, "gpubox", "far away")]

    wait_for(lambda: len(steps_in(events_of(folder))) >= 3, timeout=120)
    streamed = remote.cli("events", run_id[:12], "--host", "gpubox")
    assert streamed.returncode == 0, streamed.stderr
    lines = [json.loads(line) for line in streamed.stdout.splitlines()]
    assert lines[0]["offset"] == 0 and all(a["end"] == b["offset"] for a, b in pairwise(lines))
    assert lines[0]["event"]["type"] == "run_started"
    again = remote.cli("events", run_id, "--host", "gpubox", "--from", str(lines[2]["end"]))
    assert json.loads(again.stdout.splitlines()[0])["offset"] == lines[3]["offset"]

    once = remote.cli("watch", "latest", "--host", "gpubox", "--once")
    assert once.returncode == 0, once.stderr
    assert run_id in once.stdout and "running" in once.stdout

    stopped = remote.cli("stop", run_id, "--host", "gpubox", timeout=400)
    assert stopped.returncode == 0, stopped.stderr + stopped.stdout
    assert "stopped gracefully" in stopped.stdout
    assert json.loads((folder / "state.json").read_text())["status"] == "stopped"
    reason = json.loads((folder / "state.json").read_text())["exit_reason"]
    assert reason == f"stop file: grpo-tui stop (CLI on {socket.gethostname()})"  # who asked, and from where
    assert [p.name for p in (folder / "checkpoints").iterdir() if p.name.startswith("checkpoint-")]
    assert remote.processes_of(folder) == []
    after = json.loads(remote.cli("runs", "--host", "gpubox", "--json").stdout)
    assert [r["status"] for r in after] == ["stopped"]

    with open(folder / "trainer.log", "a", encoding="utf-8") as fh:
        fh.write("a line only the host's log holds: ünïcode\n")
    assert set(remote.server.connection_pids()) == connection, "every command went through the one connection"
    log = remote.cli("logs", run_id, "--host", "gpubox")
    assert log.returncode == 0, log.stderr
    assert log.stdout == (folder / "trainer.log").read_text(encoding="utf-8")
    assert log.stdout.endswith("a line only the host's log holds: ünïcode\n")


def test_a_dropped_connection_loses_no_step_and_repeats_none(remote, tiny_model):  # noqa: F811
    run_id = remote.launch(tiny_model, "--max-steps", "90", "--host", "otherbox")
    watch = subprocess.Popen(
        [sys.executable, "-m", "grpo_tui", "watch", run_id, "--host", "otherbox"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **remote.env, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"},
    )
    steps, killed = [], 0
    try:
        for line in watch.stdout:
            match = re.match(r"step (\d+)/", line)
            if match:
                steps.append(int(match.group(1)))
                if len(steps) == 5:
                    killed = remote.server.kill_connections()
                    assert killed >= 1
        assert watch.wait(timeout=120) == 0, watch.stderr.read()
    finally:
        watch.kill()
    folder = remote.run_folder(run_id, "otherbox")
    assert json.loads((folder / "state.json").read_text())["status"] == "completed"
    assert len(steps) == len(set(steps)), f"a step shown twice: {steps}"
    assert steps == list(range(steps[0], 91)), f"a gap: {steps}"
    assert killed >= 1 and len(steps) > 60, steps  # the kill came early in the run, and the rest was shown


HOSTILE = "x; touch {m}1 && $(touch {m}2) `touch {m}3` '\"$HOME"


def test_hostile_values_reach_the_host_as_data(remote, tiny_model, tmp_path):  # noqa: F811
    marker = str(tmp_path / "owned")
    project = HOSTILE.format(m=marker)
    env_dir = tmp_path / HOSTILE.format(m="owned").replace("/", "_")
    env_dir.mkdir()
    env_file = env_dir / "pattern_env.py"
    env_file.write_text((ROOT / "examples" / "pattern_env.py").read_text())
    target = f"$(touch {marker}4);touch {marker}5"
    done = remote.cli(
        "launch",
        "--host",
        "gpubox",
        "--model",
        tiny_model,
        "--rl-env-module",
        str(env_file),
        "--rl-env-class",
        "PatternEnv",
        "--rl-env-config",
        json.dumps({"target": target}),
        "--project-name",
        project,
        "--rl-num-generations",
        "2",
        "--batch-size",
        "2",
        "--rl-max-new-tokens",
        "4",
        "--max-steps",
        "2",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    folder = remote.run_folder(json.loads(done.stdout)["run_id"])
    wait_for(lambda: json.loads((folder / "state.json").read_text()).get("status") in ("completed", "failed"), 120)
    assert json.loads((folder / "state.json").read_text())["status"] == "completed", (
        folder / "trainer.log"
    ).read_text()
    import yaml

    config = yaml.safe_load((folder / "config.yaml").read_text())
    assert config["project_name"] == project
    assert config["rl_env_module"] == str(env_file)
    assert config["rl_env_config"] == {"target": target}
    assert not list(tmp_path.glob("owned?")), "a shell ran part of a value"
    assert not any(list(d.glob("owned*")) for d in (remote.server.dir, ROOT, Path.home()))


def test_unreachable_and_unknown_hosts_fail_in_one_line_and_hide_no_other_host(remote, tiny_model):  # noqa: F811
    dead = remote.cli("runs", "--host", "deadbox")
    assert dead.returncode == 1
    assert (
        dead.stderr.count("\n") == 1
        and "host deadbox: unreachable" in dead.stderr
        and "Connection refused" in dead.stderr
    )
    stranger = remote.cli("runs", "--host", "strangerbox")
    assert stranger.returncode == 1 and stranger.stderr.count("\n") == 1
    assert "host strangerbox: its SSH host key is not in your known_hosts" in stranger.stderr
    assert "accept it once with `ssh -F" in stranger.stderr

    every = remote.cli("runs", "--all-hosts", "--json")
    assert every.returncode == 1
    hosts = {row["host"] for row in json.loads(every.stdout)}
    assert "gpubox" in hosts and "otherbox" in hosts
    assert sorted(line.split(":")[1].strip() for line in every.stderr.splitlines()) == [
        "host deadbox",
        "host strangerbox",
    ]

    launch = remote.cli("launch", "--host", "deadbox", "--model", tiny_model, "--max-steps", "1")
    assert launch.returncode == 2 and launch.stderr.startswith("error: host deadbox: unreachable")
    table = remote.cli("hosts")
    assert table.returncode == 1
    assert re.search(r"^gpubox\s+ok\s+grpo-tui \S+\s+0 GPU", table.stdout, re.M)
    assert re.search(r"^deadbox\s+FAIL host deadbox: unreachable", table.stdout, re.M)


def test_a_missing_or_different_grpo_tui_on_the_host_is_named(remote, tmp_path):  # noqa: F811
    import yaml

    hosts = yaml.safe_load(remote.hosts_file.read_text())
    old = tmp_path / "old-grpo-tui"
    old.write_text('#!/bin/sh\necho \'{"version": "9.0.0", "run_format": 99}\'\n')
    old.chmod(0o755)
    hosts["bare"] = {**hosts["gpubox"], "command": "/nonexistent/bin/grpo-tui"}
    hosts["future"] = {**hosts["gpubox"], "command": str(old)}
    hosts_file = tmp_path / "hosts.yaml"
    hosts_file.write_text(yaml.safe_dump(hosts))
    hosts_file.chmod(0o600)
    env = {"GRPO_TUI_HOSTS": str(hosts_file)}
    bare = remote.cli("runs", "--host", "bare", env=env)
    assert bare.returncode == 1 and bare.stderr.count("\n") == 1
    assert "host bare: grpo-tui is not installed there as `/nonexistent/bin/grpo-tui`" in bare.stderr
    future = remote.cli("watch", "latest", "--host", "future", env=env)
    assert future.returncode == 2 and future.stderr.count("\n") == 1
    assert f"host future: its grpo-tui 9.0.0 writes run format 99, this one reads {FORMAT_VERSION}" in future.stderr
