"""Run a training in the foreground: start the run, print each event as it lands, pass stops on.

This is ``grpo-tui train`` and the console demo. The run itself is started detached exactly like
``grpo-tui launch`` (so closing this terminal does not kill it; reattach with ``grpo-tui watch``); this
process only reads the run folder, as any viewer does, and forwards Ctrl-C: the first asks for a graceful
stop, a second one forces the trainer out.
"""

from __future__ import annotations

import signal
import time

from rich.console import Console

from trainer_core.events import EventTail, format_metrics_line
from trainer_core.placement import Placement
from trainer_core.run_folder import FINAL_STATUSES, RunFolder

from .registry import SEVERITY_STYLES
from .supervisor import LaunchOptions, start_root

EXIT_CODES = {"completed": 0, "stopped": 3}


class EventPrinter:
    """Prints events as short lines, the way ``train`` and ``logs --events`` show a run."""

    def __init__(self, console: Console, folder: RunFolder):
        self.console = console
        self.folder = folder
        self.total = None

    def show(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "run_started":
            self.console.print(f"[bold]run {event.get('run_id')}[/] started (pid {event.get('pid')}) in {self.folder.path}")
        elif kind == "metrics":
            if self.total is None:
                self.total = self.folder.read_state().get("max_steps")
            logs = {k: v for k, v in event.items() if k not in ("type", "time", "step")}
            self.console.print(format_metrics_line(event.get("step", 0), self.total, logs), highlight=False)
        elif kind == "checkpoint":
            self.console.print(f"[dim]checkpoint saved at step {event.get('step')}: {event.get('path')}[/]")
        elif kind == "warning":
            style = SEVERITY_STYLES.get(event.get("severity"), "yellow")
            self.console.print(f"[{style}]warning {event.get('rule')}[/] step {event.get('step')}: {event.get('message')}")
            if event.get("advice"):
                self.console.print(f"  advice: {event['advice']}", highlight=False)
        elif kind == "stop_requested":
            self.console.print(f"[yellow]stop requested[/] ({event.get('reason')}): finishing the step and saving a checkpoint")
        elif kind == "error":
            self.console.print(f"[bold red]error:[/] {event.get('message')}", highlight=False)
            if event.get("traceback"):
                self.console.print(event["traceback"], highlight=False, markup=False)
        elif kind == "run_finished":
            style = {"completed": "green", "stopped": "yellow"}.get(event.get("status"), "bold red")
            reason = f" ({event['reason']})" if event.get("reason") else ""
            self.console.print(f"[{style}]run {event.get('status')}[/] at step {event.get('step')}{reason}")


def run_foreground(folder: RunFolder, placement: Placement, options: LaunchOptions | None = None,
                   console: Console | None = None, poll_interval: float = 0.2) -> int:
    console = console or Console(highlight=False, soft_wrap=True)
    printer = EventPrinter(console, folder)
    proc = start_root(folder, placement, options)

    def on_signal(signum, frame):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    tail = EventTail(folder.events_file)
    try:
        while True:
            for event in tail.poll():
                printer.show(event)
            if proc.poll() is not None:
                break
            time.sleep(poll_interval)
        for event in tail.poll():
            printer.show(event)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    status = folder.read_state().get("status")
    if status not in FINAL_STATUSES:
        console.print(f"[bold red]the run's root process exited with code {proc.returncode}[/]; see {folder.log_file}")
        return 1
    console.print(f"run folder: {folder.path}  (log: {folder.log_file.name})", highlight=False)
    return EXIT_CODES.get(status, 1)
