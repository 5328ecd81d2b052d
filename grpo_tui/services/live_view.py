"""Follow a run from outside it: its log as it grows (``grpo-tui logs``) and a live dashboard (``watch``).

Both read only the run folder, so they work on a run started by anyone, from any terminal, at any time, and
stop by themselves once the run is no longer live (it finished, or its process is gone). A long run's
events file is never parsed whole: the dashboard catches up from the file's end and the few lines that
name warnings and errors, then tails new events by byte offset.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from trainer_core.events import BackwardLines, EventTail, last_events, scan_events
from trainer_core.run_folder import FINAL_STATUSES, RunFolder

from .log_follow import LogFollower
from .registry import (
    SEVERITY_STYLES, format_duration, format_steps, is_live, live_status, read_config, run_duration, run_total,
    short_model, status_text,
)

RATE_WINDOW = 10
SHOWN_WARNINGS = 5
METRIC_ROWS = (
    ("reward", "reward"), ("reward_std", "reward std"), ("kl", "kl"), ("loss", "loss"), ("entropy", "entropy"),
    ("completions/mean_length", "completion length"), ("completions/clipped_ratio", "clipped ratio"),
)
CATCH_UP_TYPES = ("run_started", "warning", "error", "stop_requested", "run_finished")


# -- logs -----------------------------------------------------------------------------------------------


def follow_log(folder: RunFolder, out: TextIO | None = None, follow: bool = False, poll: float = 0.2) -> str:
    """Print trainer.log to ``out`` (stdout); with ``follow``, keep printing what is appended until the run is
    no longer live. Returns the run's status when it stops reading.
    """
    out = out or sys.stdout
    log = LogFollower(folder.log_file)
    while True:
        # the status is read before the log so the last read catches everything written before the end
        status = live_status(folder)
        for text in log.chunks():
            out.write(text)
        if not follow or not is_live(status):
            out.write(log.close())
            out.flush()
            return status
        out.flush()
        time.sleep(poll)


# -- dashboard ------------------------------------------------------------------------------------------


@dataclass
class Snapshot:
    """Everything one frame of the dashboard shows; ``render`` turns it into Rich renderables."""

    run_id: str
    status: str
    project: str | None = None
    model: str | None = None
    step: int | None = None
    total: int | None = None
    elapsed: float | None = None
    steps_per_s: float | None = None
    metrics: dict = field(default_factory=dict)
    kl_coef: float | None = None
    warnings: list[dict] = field(default_factory=list)
    error: dict | None = None
    stop_reason: str | None = None
    finished: dict | None = None
    exit_reason: str | None = None


class RunView:
    """A run's events folded into what the dashboard needs, kept current by ``update``."""

    def __init__(self, folder: RunFolder):
        self.folder = folder
        self.config = read_config(folder)
        self.status = live_status(folder)
        self.recent: deque[dict] = deque(maxlen=RATE_WINDOW)
        self.warnings: deque[dict] = deque(maxlen=SHOWN_WARNINGS)
        self.error: dict | None = None
        self.stop_reason: str | None = None
        self.finished: dict | None = None
        self.started_event: dict = {}
        self._catch_up()

    def _catch_up(self) -> None:
        path = self.folder.events_file
        events, end = scan_events(path, CATCH_UP_TYPES)
        metrics = last_events(BackwardLines(path, end=end), "metrics", RATE_WINDOW)
        for event in sorted(events + metrics, key=lambda e: e.get("time") or 0):
            self.add(event)
        self.tail = EventTail(path, offset=end)

    def add(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "metrics":
            self.recent.append(event)
        elif kind == "warning":
            self.warnings.append(event)
        elif kind == "error":
            self.error = event
        elif kind == "stop_requested":
            self.stop_reason = event.get("reason")
        elif kind == "run_finished":
            self.finished = event
        elif kind == "run_started":
            self.started_event = event

    def update(self) -> list[dict]:
        """Read the status, then the events written up to it; returns those events."""
        self.status = live_status(self.folder)
        events = self.tail.poll()
        for event in events:
            self.add(event)
        return events

    def _alerts(self, now: float | None) -> list[dict]:
        from .run_health import watcher_warnings

        return [{"type": "warning", **w.to_event()} for w in watcher_warnings(self.folder, self.status, now)]

    def snapshot(self, now: float | None = None) -> Snapshot:
        state = self.folder.read_state()
        last = self.recent[-1] if self.recent else {}
        return Snapshot(
            run_id=self.folder.run_id, status=self.status,
            project=self.config.get("project_name") or self.started_event.get("project_name"),
            model=self.config.get("model") or self.started_event.get("model"), step=last.get("step"),
            total=run_total(state, self.config), elapsed=run_duration(state, self.status, now, last),
            steps_per_s=_rate(list(self.recent)),
            metrics={k: v for k, v in last.items() if k not in ("type", "time")},
            kl_coef=self.config.get("rl_kl_coef"), warnings=[*self.warnings, *self._alerts(now)], error=self.error,
            stop_reason=self.stop_reason, finished=self.finished, exit_reason=state.get("exit_reason"),
        )


def _rate(metrics: list[dict]) -> float | None:
    """Steps per second over the recent metrics events."""
    if len(metrics) < 2:
        return None
    first, last = metrics[0], metrics[-1]
    try:
        seconds, steps = last["time"] - first["time"], last["step"] - first["step"]
    except (KeyError, TypeError):
        return None
    return steps / seconds if seconds > 0 and steps > 0 else None


def render(snap: Snapshot) -> RenderableType:
    parts: list[RenderableType] = [_header(snap), _metrics_table(snap)]
    if snap.warnings:
        parts.append(_warnings_table(snap.warnings))
    if snap.error:
        parts.append(_error_panel(snap.error))
    footer = _footer(snap)
    if footer:
        parts.append(footer)
    return Group(*parts)


def _header(snap: Snapshot) -> RenderableType:
    line = Text.assemble(
        (snap.run_id, "bold"), "  ", status_text(snap.status), "  ",
        f"step {format_steps(snap.step, snap.total)}", "  ", f"elapsed {format_duration(snap.elapsed)}",
    )
    if snap.steps_per_s:
        line.append(f"  {snap.steps_per_s:.2f} steps/s")
        if snap.total and snap.step is not None and is_live(snap.status):
            line.append(f"  eta {format_duration((snap.total - snap.step) / snap.steps_per_s)}")
    sub = Text(f"project {snap.project or '-'}  model {short_model(snap.model, 60)}", style="dim")
    return Group(line, sub)


def _number(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1000 else f"{value:.1f}"
    return str(value)


def _metrics_table(snap: Snapshot) -> Table:
    table = Table(title="latest metrics", title_justify="left", box=None, show_header=False, pad_edge=False)
    table.add_column("metric", style="cyan")
    table.add_column("value", justify="right")
    if not snap.metrics:
        table.add_row("", Text("no metrics yet", style="dim"))
        return table
    for key, label in METRIC_ROWS:
        if key == "kl" and snap.kl_coef == 0:
            table.add_row(label, Text("not measured (rl_kl_coef = 0)", style="dim"))
        elif key in snap.metrics or key in ("reward", "loss"):
            table.add_row(label, _number(snap.metrics.get(key)))
    for key in sorted(k for k in snap.metrics if k.startswith("rewards/") and k.endswith("/mean")):
        table.add_row(Text(key), _number(snap.metrics[key]))
    return table


def _warnings_table(warnings: list[dict]) -> Table:
    table = Table(title="warnings", title_justify="left", box=None, pad_edge=False, header_style="bold")
    for name in ("step", "rule", "severity", "message"):
        table.add_column(name, overflow="fold")
    for w in warnings:
        style = SEVERITY_STYLES.get(w.get("severity"), "dim")
        message = Text(str(w.get("message") or ""))
        if w.get("advice"):
            message.append(f"\nadvice: {w['advice']}", style="italic")
        severity = Text(str(w.get("severity")), style=style)
        table.add_row(Text(str(w.get("step", "-"))), Text(str(w.get("rule"))), severity, message)
    return table


def _error_panel(error: dict) -> Panel:
    body = Text(str(error.get("message") or ""), style="red")
    traceback = (error.get("traceback") or "").strip().splitlines()
    if traceback:
        body.append("\n" + "\n".join(traceback[-6:]), style="dim")
    return Panel(body, title=f"error ({error.get('kind', 'exception')}) at step {error.get('step', '-')}",
                 title_align="left", border_style="red")


def _footer(snap: Snapshot) -> Text | None:
    if snap.status == "lost":
        return Text("the trainer process is gone without finishing (reboot, SIGKILL or the OOM killer?)",
                    style="magenta")
    if snap.finished:
        reason = f": {snap.finished['reason']}" if snap.finished.get("reason") else ""
        return Text(f"run {snap.finished.get('status')} at step {snap.finished.get('step')}{reason}")
    if snap.status in FINAL_STATUSES:
        return Text(f"run {snap.status}" + (f": {snap.exit_reason}" if snap.exit_reason else ""))
    if snap.stop_reason:
        return Text(f"stop requested ({snap.stop_reason}): finishing the step and saving a checkpoint", style="yellow")
    return None


def watch(folder: RunFolder, console: Console | None = None, refresh: float = 0.5, once: bool = False) -> str:
    """Show the run live until it is no longer live; returns its status then.

    ``once`` prints a single frame. On a console that is not a terminal (a pipe, a file) the first frame is
    followed by one line per new event. Ctrl-C leaves the view (the run goes on) and returns the current status.
    """
    console = console or Console()
    view = RunView(folder)
    if once:
        console.print(render(view.snapshot()))
        return view.status
    try:
        return (_watch_live if console.is_terminal else _watch_lines)(view, console, refresh)
    except KeyboardInterrupt:
        return view.status


def _watch_live(view: RunView, console: Console, refresh: float) -> str:
    with Live(render(view.snapshot()), console=console, auto_refresh=False) as live:
        while True:
            view.update()
            live.update(render(view.snapshot()), refresh=True)
            if not is_live(view.status):
                return view.status
            time.sleep(refresh)


def _watch_lines(view: RunView, console: Console, refresh: float) -> str:
    from .foreground import EventPrinter

    console.print(render(view.snapshot()))
    printer = EventPrinter(console, view.folder)
    while True:
        for event in view.update():
            printer.show(event)
        if not is_live(view.status):
            return view.status
        time.sleep(refresh)
