"""Helpers shared by every test layer: where things are, the CLI as a child process, waiting, ports.

Fixtures live in the conftest files; plain functions live here, imported by name. The Pilot helpers of the
app layer that read a screen are in tests/app/conftest.py.

Every wait of the suite goes through ``wait_for`` (plain code) or ``wait_until`` (under Pilot, or any coroutine):
they poll a condition until it holds, and fail with what was awaited, the last value seen and, under Pilot, the
screen. Their deadlines are the seconds a test names times ``GRPO_TUI_TEST_TIME_SCALE`` (default 1): set it to 3 on
a slow or loaded machine and every wait allows three times as long, while a test that passes waits no longer than
its condition takes. tests/unit/test_waits.py keeps it so: no sleep or pause in a loop outside this module.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

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
    "scaled",
    "time_scale",
    "wait_for",
    "wait_until",
]

T = TypeVar("T")
TIME_SCALE_ENV = "GRPO_TUI_TEST_TIME_SCALE"


def cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """Run ``grpo-tui ARGS`` in a child process and capture its output."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **kwargs.pop("env", {})}
    return subprocess.run(
        [sys.executable, "-m", "grpo_tui", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=kwargs.pop("cwd", ROOT),
        timeout=_scaled_or_none(kwargs.pop("timeout", 300)),
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


def time_scale() -> float:
    """How many times longer than named every wait of the suite may take: ``GRPO_TUI_TEST_TIME_SCALE``, default 1."""
    raw = os.environ.get(TIME_SCALE_ENV, "").strip()
    if not raw:
        return 1.0
    try:
        scale = float(raw)
    except ValueError:
        scale = math.nan
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"{TIME_SCALE_ENV} must be a number above 0 (e.g. 3 on a loaded machine), got {raw!r}")
    return scale


def scaled(seconds: float) -> float:
    """``seconds`` as this machine's deadline: times ``GRPO_TUI_TEST_TIME_SCALE``."""
    return seconds * time_scale()


def _scaled_or_none(seconds: float | None) -> float | None:
    return None if seconds is None else scaled(seconds)


def _describe(predicate: Callable[[], Any]) -> str:
    """A condition as its source says it (a lambda's line), for a failure message."""
    try:
        source = " ".join(line.strip() for line in inspect.getsource(predicate).splitlines())
    except (OSError, TypeError):
        source = getattr(predicate, "__qualname__", repr(predicate))
    return source if len(source) <= 300 else source[:297] + "..."


def _seconds(seconds: float) -> str:
    return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.2g}s"


def _timed_out(predicate, what: str | None, timeout: float, value: Any, shown: str | None) -> AssertionError:
    scale = time_scale()
    limit = _seconds(timeout * scale) + (f" ({_seconds(timeout)} x {TIME_SCALE_ENV}={scale:g})" if scale != 1 else "")
    lines = [
        f"waited {limit} for {what or 'the condition'}, in vain",
        f"  condition: {_describe(predicate)}",
        f"  last value: {value!r}"[:2000],
    ]
    if shown:
        lines.append(f"  then: {shown}")
    if scale == 1:
        lines.append(f"  (on a slow or loaded machine, {TIME_SCALE_ENV}=3 allows every wait three times as long)")
    return AssertionError("\n".join(lines))


def _show(show: Callable[[], object] | None) -> str | None:
    if show is None:
        return None
    try:
        return str(show())
    except Exception as exc:  # the message must not hide the timeout behind another error
        return f"(could not show the state: {exc!r})"


def wait_for(
    predicate: Callable[[], T],
    timeout: float = 120,
    interval: float = 0.1,
    *,
    what: str | None = None,
    show: Callable[[], object] | None = None,
    pause: Callable[[float], object] = time.sleep,
) -> T:
    """Call ``predicate`` every ``interval`` seconds until it returns something true, and return that.

    Fails with an AssertionError naming ``what`` (or the condition's source), the last value and ``show()`` once
    ``timeout`` seconds times GRPO_TUI_TEST_TIME_SCALE have passed. An exception the predicate raises propagates.
    ``pause`` is how to let time pass between calls (a browser page's ``wait_for_timeout`` keeps its events going).
    """
    deadline = time.monotonic() + scaled(timeout)
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _timed_out(predicate, what, timeout, value, _show(show))
        pause(interval)


async def wait_until(
    pilot,
    predicate: Callable[[], T],
    timeout: float = 60,
    what: str | None = None,
    *,
    interval: float = 0.05,
    show: Callable[[], object] | None = None,
) -> T:
    """``wait_for`` for a coroutine: awaits ``pilot.pause(interval)`` between polls, so the app runs meanwhile.

    With ``pilot`` None it awaits ``asyncio.sleep`` instead (after an app has exited). Under Pilot a timeout also
    shows the app's screen, unless ``show`` says what to show. (``what`` comes fourth, as in the app layer's first
    helper of this name.)
    """
    app = getattr(pilot, "app", None)
    if show is None and app is not None:
        show = lambda: _screen_of(app)  # noqa: E731
    deadline = time.monotonic() + scaled(timeout)
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _timed_out(predicate, what, timeout, value, _show(show))
        pause: Awaitable[None] = asyncio.sleep(interval) if pilot is None else pilot.pause(interval)
        await pause


def _screen_of(app) -> str:
    """The app's screen as the user would see it, its name and its last notifications."""
    screen = app.screen
    strips = screen._compositor.render_strips()
    notes = [str(n.message) for n in list(app._notifications)[-3:]]
    text = "\n".join(strip.text.rstrip() for strip in strips).rstrip()
    return f"{type(screen).__name__} showed (notifications: {notes!r}):\n{text}"
