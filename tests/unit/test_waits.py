"""Every wait of the suite goes through tests/helpers.py's ``wait_for``/``wait_until``, whose deadlines scale with
GRPO_TUI_TEST_TIME_SCALE: a test that polls with a sleep of its own has a fixed deadline that a loaded machine
misses (a monitor test once failed so, on two workers, "no reward point within 60 s", yet passed alone in 19 s).
The scan below finds such loops; the helpers' own behaviour is tested after it."""

from __future__ import annotations

import ast
import asyncio
import time
from pathlib import Path

import pytest

from tests.helpers import TIME_SCALE_ENV, scaled, time_scale, wait_for, wait_until

TESTS = Path(__file__).resolve().parents[1]
HELPERS = TESTS / "helpers.py"
# what lets time pass: time.sleep, asyncio.sleep, pilot.pause, a Playwright page's wait_for_timeout
SLEEPS = {"sleep", "pause", "wait_for_timeout"}
ALLOW = "# not a wait:"  # on the call's line or the loop's first line: a loop that paces on purpose, and says why
LOOPS = (ast.While, ast.For, ast.AsyncFor)


def _sleep_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        return name if name in SLEEPS else None
    return None


def sleeps_in_loops(source: str) -> list[tuple[int, int, str]]:
    """(loop line, call line, call name) of each sleep lexically inside a loop of the same function."""
    found = []

    def visit(node: ast.AST, loop: ast.AST | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                visit(child, None)  # a function defined in a loop sleeps when called, not per turn
                continue
            name = _sleep_name(child)
            if name and loop is not None:
                found.append((loop.lineno, child.lineno, name))
            visit(child, child if isinstance(child, LOOPS) else loop)

    visit(ast.parse(source), None)
    return found


def polling_loops(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    return [
        f"{path.relative_to(TESTS.parent)}:{call}: {name}() in the loop of line {loop}: {lines[call - 1].strip()}"
        for loop, call, name in sleeps_in_loops(source)
        if ALLOW not in lines[call - 1] and ALLOW not in lines[loop - 1]
    ]


def test_no_test_polls_with_a_sleep_of_its_own():
    found = [hit for path in sorted(TESTS.rglob("*.py")) if path != HELPERS for hit in polling_loops(path)]
    assert not found, (
        "wait with tests/helpers.py's wait_for(predicate, timeout, what=...) or, under Pilot, "
        "await wait_until(pilot, predicate, timeout, what=...): their deadlines scale with "
        f"{TIME_SCALE_ENV}. A loop that lets time pass on purpose says why with '{ALLOW} ...' on its line.\n"
        + "\n".join(found)
    )


def test_the_scan_finds_the_polling_shapes_and_spares_what_is_not_one():
    polls = """
import time
async def a(pilot):
    while not done():
        await pilot.pause(0.1)
    for _ in range(50):
        if done():
            break
        await asyncio.sleep(0.1)
def b(page):
    while True:
        for line in lines():
            time.sleep(0.1)
        page.wait_for_timeout(200)
"""
    assert [(loop, call) for loop, call, _ in sleeps_in_loops(polls)] == [(4, 5), (6, 9), (12, 13), (11, 14)]
    spared = """
import time
async def a(pilot):
    await pilot.pause(0.2)
    for key in keys:
        def later():
            time.sleep(1)
        await pilot.press(key)
    while not done():
        press(lambda: time.sleep(0))
"""
    assert sleeps_in_loops(spared) == []


def test_wait_for_returns_the_first_true_value(monkeypatch):
    monkeypatch.delenv(TIME_SCALE_ENV, raising=False)
    calls = iter([None, 0, [], "ready"])
    assert wait_for(lambda: next(calls), timeout=5, interval=0.001) == "ready"


def test_a_timeout_says_what_was_awaited_and_the_last_value(monkeypatch):
    monkeypatch.delenv(TIME_SCALE_ENV, raising=False)
    with pytest.raises(AssertionError) as failed:
        wait_for(lambda: [], timeout=0.05, interval=0.01, what="the rows", show=lambda: "the table was empty")
    message = str(failed.value)
    assert message.startswith("waited 0.05s for the rows, in vain")
    assert "condition: wait_for(lambda: []," in message and "last value: []" in message
    assert "then: the table was empty" in message and f"{TIME_SCALE_ENV}=3" in message


def test_the_deadline_scales_with_the_setting(monkeypatch):
    monkeypatch.setenv(TIME_SCALE_ENV, "4")
    assert time_scale() == 4 and scaled(2.5) == 10
    started = time.monotonic()
    with pytest.raises(AssertionError, match=rf"waited 0.2s \(0.05s x {TIME_SCALE_ENV}=4\)"):
        wait_for(lambda: False, timeout=0.05, interval=0.01)
    assert time.monotonic() - started >= 0.2
    for bad in ("fast", "0", "-1", "nan", "inf"):
        monkeypatch.setenv(TIME_SCALE_ENV, bad)
        with pytest.raises(ValueError, match=f"{TIME_SCALE_ENV} must be a number above 0"):
            time_scale()
    monkeypatch.setenv(TIME_SCALE_ENV, " ")
    assert time_scale() == 1


def test_a_predicate_that_raises_is_not_retried(monkeypatch):
    monkeypatch.delenv(TIME_SCALE_ENV, raising=False)
    with pytest.raises(ZeroDivisionError):
        wait_for(lambda: 1 / 0, timeout=5)


def test_the_async_wait_pauses_the_pilot_and_shows_the_screen_on_a_timeout(monkeypatch):
    from textual.app import App
    from textual.widgets import Static

    monkeypatch.delenv(TIME_SCALE_ENV, raising=False)

    class Tiny(App):
        def compose(self):
            yield Static("hello from the screen")

    async def drive() -> str:
        app = Tiny()
        async with app.run_test(size=(40, 5)) as pilot:
            ticks = []
            assert await wait_until(pilot, lambda: ticks.append(1) or len(ticks) > 2, timeout=5) is True
            with pytest.raises(AssertionError) as failed:
                await wait_until(pilot, lambda: app.screen.id == "nope", timeout=0.1, what="another screen")
        assert await wait_until(None, lambda: True) is True  # no pilot: asyncio.sleep between polls
        return str(failed.value)

    message = asyncio.run(drive())
    assert "for another screen, in vain" in message and "last value: False" in message
    assert "Screen showed" in message and "hello from the screen" in message
