"""Helpers shared by every test layer: where things are, the CLI as a child process, waiting, ports.

Fixtures live in the conftest files; plain functions live here, imported by name. The Pilot helpers of the
app layer are in tests/app/conftest.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from trainer_core.contract.config.ports import free_port
from trainer_core.contract.run.event_log import EventTail
from trainer_core.contract.run.events import Event, UnknownEvent

ROOT = Path(__file__).resolve().parents[1]
ENVS = Path(__file__).resolve().parent / "envs"
EXAMPLES = ROOT / "examples"

__all__ = [
    "ENVS",
    "EXAMPLES",
    "PATTERN_FLAGS",
    "ROOT",
    "cli",
    "events_of",
    "free_port",
    "only_run",
    "pattern_args",
    "wait_for",
]


def cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """Run ``grpo-tui ARGS`` in a child process and capture its output."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **kwargs.pop("env", {})}
    return subprocess.run(
        [sys.executable, "-m", "grpo_tui", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=kwargs.pop("cwd", ROOT),
        timeout=kwargs.pop("timeout", 300),
        **kwargs,
    )


# a quick, learnable run of the pattern environment: what most tests that train launch
PATTERN_FLAGS = (
    "--rl-env-module",
    str(EXAMPLES / "pattern_env.py"),
    "--rl-env-class",
    "PatternEnv",
    "--rl-num-generations",
    "4",
    "--batch-size",
    "8",
    "--rl-max-new-tokens",
    "12",
    "--lr",
    "0.002",
)


def pattern_args(model: str, runs_dir: Path, *extra: str) -> list[str]:
    """``train`` a quick, learnable run of the pattern environment."""
    return ["train", "--model", model, *PATTERN_FLAGS, "--runs-dir", str(runs_dir), *extra]


def only_run(runs_dir: Path) -> Path:
    runs = [p for p in runs_dir.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def events_of(run: Path) -> list[Event]:
    """The run's events, typed. Every complete line must be a valid event of a type the schema knows."""
    tail = EventTail(run / "events.jsonl")
    events = tail.poll()
    assert tail.bad_lines == 0, f"{tail.bad_lines} line(s) of {run / 'events.jsonl'} are not JSON objects"
    unknown = [e.type for e in events if isinstance(e, UnknownEvent)]
    assert not unknown, f"event types the schema does not know: {unknown}"
    return events


def wait_for(predicate, timeout: float = 120, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")
