"""``grpo-tui train`` and a piped ``watch`` print a poll's events in one ``print`` (rich costs per call more than per
line, and a trainer logs many steps a second): the output is the same, byte for byte and style for style, as the
events printed one by one, and a long backlog goes out in parts."""

from __future__ import annotations

import io

from rich.console import Console

from grpo_tui.services.lifecycle import foreground
from grpo_tui.services.lifecycle.foreground import EventPrinter
from trainer_core.contract.run.events import (
    Checkpoint,
    Error,
    HealthWarning,
    Metrics,
    RunFinished,
    RunStarted,
    StopRequested,
    warning,
)
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status


def styled_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, color_system="truecolor", force_terminal=True, width=60, soft_wrap=True), out


def events() -> list:
    alarm: HealthWarning = warning(HealthRule.KL_EXPLOSION, Severity.CRITICAL, 3, "KL is 9 " + "x" * 80, {"kl": 9})
    return [
        RunStarted(run_id="r1", pid=7, max_steps=3, resumed_from="checkpoint-2"),
        *[Metrics(step=i, values={"reward": 0.1 * i, "kl": 0.01, "loss": 0.0}) for i in (1, 2, 3)],
        alarm,
        Checkpoint(step=3, path="checkpoints/checkpoint-3"),
        StopRequested(reason="auto-stop: kl_explosion at step 3", step=3),
        Error(message="boom\nsecond line", traceback="Traceback (most recent call last):\n  x\nValueError: y\n"),
        RunFinished(status=Status.FAILED, reason="boom", step=3),
    ]


def test_a_batch_prints_what_the_events_print_one_by_one(tmp_path):
    folder = RunFolder.create(tmp_path)
    one_console, one_by_one = styled_console()
    printer = EventPrinter(one_console, folder)
    for event in events():
        printer.show(event)
    batch_console, batched = styled_console()
    calls = []
    print_once = batch_console.print
    batch_console.print = lambda *a, **k: (calls.append(a), print_once(*a, **k))  # type: ignore[method-assign]
    EventPrinter(batch_console, folder).show_all(events())
    assert batched.getvalue() == one_by_one.getvalue()
    assert "\x1b[" in batched.getvalue() and "advice:" in batched.getvalue()  # styled, two lines for the warning
    assert len(calls) == 1


def test_a_long_backlog_is_printed_in_parts_and_nothing_else_is_printed(tmp_path, monkeypatch):
    monkeypatch.setattr(foreground, "PRINT_BATCH", 4)
    folder = RunFolder.create(tmp_path)
    console, out = styled_console()
    calls = []
    print_once = console.print
    console.print = lambda *a, **k: (calls.append(a), print_once(*a, **k))  # type: ignore[method-assign]
    printer = EventPrinter(console, folder)
    printer.show_all(Metrics(step=i, values={"reward": 0.5}) for i in range(1, 11))
    printer.show_all([])
    assert len(calls) == 3  # 4 + 4 + 2 lines
    assert [line.split()[1] for line in out.getvalue().splitlines()] == [str(i) for i in range(1, 11)]
