"""Run a training in the foreground: start the run, print each event as it lands, pass stops on.

This is ``grpo-tui train`` and the console demo. The run itself is started detached exactly like
``grpo-tui launch`` (so closing this terminal does not kill it; reattach with ``grpo-tui watch``); this
process only reads the run folder, as any viewer does, and forwards Ctrl-C: the first asks for a graceful
stop, a second one forces the trainer out.

A mistake in what the user gave (an environment class that is not there, a dataset without a ``prompt``
column, a tool without a docstring, ...) is found by the trainer before training and recorded as an ``error``
event flagged ``user_mistake``: it is printed as its one message (what, where, the fix), with no traceback of
grpo-tui's own, and ``train`` exits 2 as for any bad input.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterable

from rich.console import Console
from rich.text import Text

from grpo_tui.palette import plain_palette
from grpo_tui.safe_text import clean
from grpo_tui.services.lifecycle.supervisor import LaunchOptions, start_root
from trainer_core.contract.config.placement import Placement
from trainer_core.contract.health.remedy_plan import REMEDY_PREFIX
from trainer_core.contract.run.event_log import EventTail, complete_size
from trainer_core.contract.run.events import (
    USER_MISTAKE,
    Checkpoint,
    Error,
    Event,
    HealthWarning,
    Metrics,
    Rewound,
    RunFinished,
    RunStarted,
    StopRequested,
    format_metrics_line,
)
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import EXIT_BAD_INPUT, EXIT_CODES, Status

PRINT_BATCH = 256  # lines printed at once at most: a long backlog (a piped watch of a finished run) goes in parts


class EventPrinter:
    """Prints events as short lines, the way ``train`` and a piped ``watch`` show a run."""

    def __init__(self, console: Console, folder: RunFolder):
        self.console = console
        self.folder = folder
        self.total = None
        self.palette = plain_palette()
        self.error: Error | None = None  # the last error shown: the run's end need not repeat its message

    def show(self, event: Event) -> None:
        self.show_all((event,))

    def show_all(self, events: Iterable[Event]) -> None:
        """Each event as a line or two, all printed at once: a trainer logs many steps a second, and rich's cost
        is per ``print`` more than per line. Every field is shown literally (``safe_text``); styles come from here."""
        lines: list[Text] = []
        for event in events:
            self._lines(event, lines)
            if len(lines) >= PRINT_BATCH:
                self._print(lines)
        self._print(lines)

    def _print(self, lines: list[Text]) -> None:
        if lines:  # one line per event (or two), whatever the width
            self.console.print(Text("\n").join(lines), highlight=False, soft_wrap=True)
            lines.clear()

    def _lines(self, event: Event, out: list[Text]) -> None:
        p = self.palette

        def line(*parts: str | tuple[str, str]) -> None:
            text = Text()
            for part in parts:
                piece, style = part if isinstance(part, tuple) else (part, "")
                text.append(clean(piece), style=style)
            out.append(text)

        if isinstance(event, RunStarted):
            self.total = event.max_steps if event.max_steps and event.max_steps > 0 else None
            line((f"run {event.run_id}", "bold"), f" started (pid {event.pid}) in {self.folder.path}")
            if event.resumed_from:
                restart = f" (restart {event.restart})" if event.restart else ""
                line(f"  resumed from {event.resumed_from}{restart}")
        elif isinstance(event, Metrics):
            if self.total is None:
                self.total = self.folder.read_state().get("max_steps")
            line(format_metrics_line(event.step, self.total, event.values))
        elif isinstance(event, Checkpoint):
            line((f"checkpoint saved at step {event.step}: {event.path}", "dim"))
        elif isinstance(event, HealthWarning):
            line((f"warning {event.rule}", p.severity(event.severity)), f" step {event.step}: {event.message}")
            if event.advice:
                line(f"  advice: {event.advice}")
        elif isinstance(event, StopRequested):
            then = (
                "finishing the step, then the run rolls back"
                if (event.reason or "").startswith(REMEDY_PREFIX)
                else "finishing the step and saving a checkpoint"
            )
            line(("stop requested", p.status(Status.STOPPING)), f" ({event.reason}): {then}")
        elif isinstance(event, Rewound):
            who = f"the {event.rule} remedy" if event.rule else f"{event.by}"
            changes = "; ".join(f"{k} {v.get('from')!r} -> {v.get('to')!r}" for k, v in event.changes.items())
            line(
                ("rolled back", p.status(Status.STARTING)),
                f" from step {event.from_step} to {event.checkpoint} by {who}" + (f": {changes}" if changes else ""),
            )
        elif isinstance(event, Error):
            self.error = event
            line(("error:", p.role("error", bold=True)), f" {event.message}")
            if event.traceback:
                line(event.traceback.rstrip("\n"))
        elif isinstance(event, RunFinished):
            said = self.error is not None and event.reason == (self.error.message.splitlines() or [""])[0]
            reason = " (the error above)" if said else f" ({event.reason})" if event.reason else ""
            line((f"run {event.status}", p.status(event.status)), f" at step {event.step}{reason}")

    @property
    def user_mistake(self) -> bool:
        """The run failed on a mistake of the user's, found before training (its error event says so)."""
        return self.error is not None and self.error.extra.get(USER_MISTAKE) is True


def run_foreground(
    folder: RunFolder,
    placement: Placement,
    options: LaunchOptions | None = None,
    console: Console | None = None,
    poll_interval: float = 0.2,
) -> int:
    console = console or Console(highlight=False, soft_wrap=True)
    printer = EventPrinter(console, folder)
    resuming = bool(folder.read_state().get("resume_from"))  # print the new leg, not the run's history again
    offset = complete_size(folder.events_file) if resuming else 0
    proc = start_root(folder, placement, options)

    def on_signal(signum, frame):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    tail = EventTail(folder.events_file, offset=offset)
    try:
        while True:
            printer.show_all(tail.poll())
            if proc.poll() is not None:
                break
            time.sleep(poll_interval)
        printer.show_all(tail.poll())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    status = folder.status()
    if status is None or not status.is_final:
        console.print(
            Text.assemble(
                (
                    f"the run's root process exited with code {proc.returncode}",
                    printer.palette.role("error", bold=True),
                ),
                clean(f"; see {folder.log_file}"),
            )
        )
        return 1
    console.print(Text(clean(f"run folder: {folder.path}  (log: {folder.log_file.name})")), highlight=False)
    if status is Status.FAILED and (printer.user_mistake or proc.returncode == EXIT_BAD_INPUT):
        return EXIT_BAD_INPUT
    return EXIT_CODES.get(status, 1)
