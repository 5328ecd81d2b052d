"""Notify URLs are secrets, and a command line is not: ``ps`` shows it to every user of the machine. While a real
``grpo-tui train --notify URL`` runs, no process's command line holds the URL (the foreground ``train`` executes
itself again without it before the run folder exists; the root and the trainer never had it), nor does the
environment of the run's processes; the run still alerts the URL. ``$GRPO_TUI_NOTIFY`` and a launch on a host
pass URLs without any command line; the launch form's save writes them masked."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import psutil
import pytest
import yaml

from tests.remote_hosts import remote, sshd  # noqa: F401
from trainer_core.contract.config.notify_urls import NOTIFY_ENV, NOTIFY_FILE, is_masked, mask
from trainer_core.contract.run.process import RUN_MARKER

from ..helpers import PATTERN_FLAGS, ROOT, pattern_args, wait_for
from .test_notify import Receiver

SECRET = "t0p-s3cr3t-h00k"


def _shown(secret: str, but: int | None = None) -> list[str]:
    """The command lines, and the environments of the run's processes, that hold ``secret`` (``but``: a pid whose
    command line the user typed it on)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if secret in " ".join(proc.info["cmdline"] or []) and proc.info["pid"] != but:
            found.append(f"pid {proc.info['pid']} argv: {proc.info['cmdline']}")
        try:
            env = proc.environ()
        except (psutil.Error, OSError):
            continue
        if RUN_MARKER in env and any(secret in value for value in env.values()):
            found.append(f"pid {proc.info['pid']} environment")
    return found


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.server.shutdown()


def test_no_process_shows_the_notify_url_of_a_foreground_train(tiny_model, runs_dir, receiver, tmp_path):
    url = receiver.url(f"/hook/{SECRET}?token={SECRET}")
    out = tmp_path / "train.out"
    argv = pattern_args(tiny_model, runs_dir, "--max-steps", "4", "--save-steps", "1000", "--notify", url)
    with open(out, "wb") as fh:
        train = subprocess.Popen(
            [sys.executable, "-m", "grpo_tui", *argv], stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT
        )
    seen: list = []
    samples: list[int] = []  # one entry per look at the processes

    def ended() -> bool:
        if train.poll() is not None:
            return True
        # from the moment the run folder exists, nothing that lives on may show the URL
        if samples or (runs_dir.exists() and any(runs_dir.iterdir())):
            seen.extend(_shown(SECRET))
            samples.append(1)
        return False

    try:
        wait_for(ended, 300, 0.05, what="the foreground train to end", show=out.read_text)
    finally:
        if train.poll() is None:
            train.kill()
    output = out.read_text()
    assert train.returncode == 0, output
    assert len(samples) > 20 and not seen, seen
    assert SECRET not in output
    (run,) = runs_dir.iterdir()
    assert [b["event"] for b in receiver.bodies(f"/hook/{SECRET}")][-1:] == ["run_end"]  # the real URL was used
    private = run / NOTIFY_FILE
    assert SECRET in private.read_text() and stat.S_IMODE(private.stat().st_mode) == 0o600
    for path in run.rglob("*"):
        if path.is_file() and path != private:
            assert SECRET.encode() not in path.read_bytes(), path
    assert yaml.safe_load((run / "config.yaml").read_text())["notify"] == [mask(url)]


def test_notify_urls_from_the_environment_reach_the_run_and_no_child(tiny_model, runs_dir, receiver):
    url = receiver.url(f"/env/{SECRET}")
    argv = pattern_args(tiny_model, runs_dir, "--max-steps", "1", "--save-steps", "1000", "--dry-run")
    argv[0] = "launch"
    env = {**os.environ, NOTIFY_ENV: f"{url} not-a-url"}
    done = subprocess.run([sys.executable, "-m", "grpo_tui", *argv], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 2 and "notify URL ***" in done.stderr and SECRET not in done.stderr  # checked, masked
    env[NOTIFY_ENV] = url
    argv.remove("--dry-run")
    done = subprocess.run(
        [sys.executable, "-m", "grpo_tui", *argv, "--json"], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    (run,) = runs_dir.iterdir()
    assert SECRET in (run / NOTIFY_FILE).read_text()
    assert yaml.safe_load((run / "config.yaml").read_text())["notify"] == [mask(url)]

    def ended() -> bool:
        bodies = receiver.bodies(f"/env/{SECRET}")
        if bodies and bodies[-1]["event"] == "run_end":
            return True
        assert not _shown(SECRET)
        return False

    wait_for(ended, 300, 0.2, what="the run's run_end alert", show=lambda: receiver.bodies(f"/env/{SECRET}"))


def test_masking_is_exact():
    assert is_masked("https://hooks.slack.com/***") and is_masked("http://127.0.0.1:8080/***#slack")
    for real in ("https://x.org/a***b", "https://x.org/***/token", "https://u:p@x.org/***", "https://x.org/***?t=1"):
        assert not is_masked(real) and is_masked(mask(real))


def test_a_launch_on_a_host_sends_the_urls_on_stdin_not_on_its_command_line(monkeypatch):
    from grpo_tui.cli.launch import notify_on_stdin

    url, env_url = f"https://a.example/{SECRET}", f"https://b.example/{SECRET}-env"
    monkeypatch.setenv(NOTIFY_ENV, env_url)
    words, data = notify_on_stdin(["launch", "--model", "m", "--notify", url, "--max-steps=3"], None)
    assert words == ["launch", "--model", "m", "--max-steps=3", "--config", "-"]
    assert data is not None and yaml.safe_load(data) == {"notify": [url, env_url]}
    assert NOTIFY_ENV not in os.environ  # not passed on to anything this process starts
    config = b"model: m\nnotify: https://c.example/x\n"
    words, data = notify_on_stdin(["launch", "--config", "-", f"--notify={url}"], config)
    assert words == ["launch", "--config", "-"] and data is not None
    assert yaml.safe_load(data) == {"model": "m", "notify": ["https://c.example/x", url]}
    assert notify_on_stdin(["launch", "--model", "m"], None) == (["launch", "--model", "m"], None)


def test_a_real_url_holding_stars_is_hidden_in_notify_json_not_kept_in_config(tmp_path):
    from trainer_core.contract.config.notify_urls import read_run_urls, secure_config
    from trainer_core.contract.config.run_config import RunConfig

    real = f"https://x.org/hook/***{SECRET}"
    masked = secure_config(tmp_path, RunConfig(notify=[real, "https://y.org/***"]))
    assert masked is not None and masked.notify == ["https://x.org/***", "https://y.org/***"]
    assert read_run_urls(tmp_path) == [real]


@pytest.mark.slow
def test_a_launch_on_a_host_shows_the_url_on_no_command_line_there(remote, tiny_model, receiver, tmp_path):  # noqa: F811
    """The host is a real sshd on 127.0.0.1, so its processes (sshd's shell, its grpo-tui, the run) are seen here."""
    url = receiver.url(f"/remote/{SECRET}")
    argv = ["launch", "--host", "gpubox", "--model", tiny_model, *PATTERN_FLAGS, "--max-steps", "1", "--notify", url]
    out = tmp_path / "launch.out"
    with open(out, "wb") as fh:
        launch = subprocess.Popen(
            [sys.executable, "-m", "grpo_tui", *argv, "--save-steps", "1000", "--json"],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env={**os.environ, **remote.env},
            cwd=ROOT,
        )
    seen = []

    def ended() -> bool:
        if any(b["event"] == "run_end" for b in receiver.bodies(f"/remote/{SECRET}")):
            return True
        seen.extend(_shown(SECRET, but=launch.pid))  # the launch itself: the command line the user typed
        return False

    wait_for(ended, 300, 0.05, what="the run's run_end alert", show=out.read_text)
    assert launch.wait(timeout=60) == 0, out.read_text()
    assert not seen, seen
