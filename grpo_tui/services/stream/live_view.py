"""Follow a run from outside it: a live dashboard (``grpo-tui watch`` in a pipe or with ``--once``).

It reads only the run folder, so it works on a run started by anyone, from any terminal, at any time, and
stops by itself once the run is no longer live (it finished, or its process is gone). A long run's events
file is never parsed whole: the dashboard catches up from the file's end and the few lines that name
warnings and errors, then tails new events by byte offset. A run's log is followed by ``log_follow.py``.
Lines of events.jsonl that are no event are counted in the file's last 64 KiB when the view starts
(``line_check.check_end``, as ``grpo-tui runs`` counts them), and one line above the first frame says how many and
where the first is (never wrapped, so a pipe gets it whole). Lines appended while the view is open are judged as
the monitor judges them: a pipe gets one such line when the first is skipped, and the live dashboard keeps the
count under its frame. A run that went back to an older checkpoint shows its live history (run/rewinds.py): a
``rewound`` event drops the warnings and the recent steps past its step, and the header names the latest rewind.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field, replace

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from grpo_tui.formatting import format_duration, format_steps, short_model
from grpo_tui.palette import plain_palette
from grpo_tui.safe_text import clean, clean_line
from grpo_tui.services.catalog.health import watcher_warnings
from grpo_tui.services.catalog.status import is_live, live_status, run_duration, run_total
from grpo_tui.services.stream.rejected_lines import end_notice
from trainer_core.contract.run.event_log import BackwardLines, EventTail, last_events, read_line, scan_events
from trainer_core.contract.run.events import (
    Error,
    Event,
    EventType,
    HealthWarning,
    Metrics,
    Rewound,
    RunFinished,
    RunStarted,
    StopRequested,
)
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.line_check import SkippedLines, check_end
from trainer_core.contract.run.status import Status

RATE_WINDOW = 10
SHOWN_WARNINGS = 5
METRIC_ROWS = (
    ("reward", "reward"),
    ("reward_std", "reward std"),
    ("kl", "kl"),
    ("loss", "loss"),
    ("entropy", "entropy"),
    ("completions/mean_length", "completion length"),
    ("completions/clipped_ratio", "clipped ratio"),
)
CATCH_UP_TYPES = (
    EventType.RUN_STARTED,
    EventType.WARNING,
    EventType.ERROR,
    EventType.STOP_REQUESTED,
    EventType.RUN_FINISHED,
    EventType.REWOUND,
)


# -- dashboard ------------------------------------------------------------------------------------------


@dataclass
class Snapshot:
    """Everything one frame of the dashboard shows; ``render`` turns it into Rich renderables."""

    run_id: str
    status: Status
    project: str | None = None
    model: str | None = None
    step: int | None = None
    total: int | None = None
    elapsed: float | None = None
    steps_per_s: float | None = None
    metrics: dict = field(default_factory=dict)
    kl_coef: float | None = None
    warnings: list[HealthWarning] = field(default_factory=list)
    error: Error | None = None
    stop_reason: str | None = None
    finished: RunFinished | None = None
    exit_reason: str | None = None
    appended_skipped: SkippedLines | None = None
    rewinds: list[Rewound] = field(default_factory=list)


class RunView:
    """A run's events folded into what the dashboard needs, kept current by ``update``."""

    def __init__(self, folder: RunFolder):
        self.folder = folder
        self.config = folder.read_config()
        self.status = live_status(folder)
        self.recent: deque[Metrics] = deque(maxlen=RATE_WINDOW)
        self.warnings: deque[HealthWarning] = deque(maxlen=SHOWN_WARNINGS)
        self.error: Error | None = None
        self.stop_reason: str | None = None
        self.finished: RunFinished | None = None
        self.started_event = RunStarted()
        self.rewinds: list[Rewound] = []
        self._catch_up()

    def _catch_up(self) -> None:
        path = self.folder.events_file
        events, end = scan_events(path, CATCH_UP_TYPES)
        metrics = last_events(BackwardLines(path, end=end), EventType.METRICS, RATE_WINDOW)
        for event in sorted(events + metrics, key=lambda e: e.time or 0):
            self.add(event)
        self.tail = EventTail(path, offset=end)
        self.tail_start = end
        self.skipped: SkippedLines | None = check_end(path)  # lines at the end that are no event (line_check.py)
        self.appended_skipped: SkippedLines | None = None  # and among the lines appended since

    def add(self, event: Event) -> None:
        if isinstance(event, Metrics):
            self.recent.append(event)
        elif isinstance(event, HealthWarning):
            self.warnings.append(event)
        elif isinstance(event, Error):
            self.error = event
        elif isinstance(event, StopRequested):
            self.stop_reason = event.reason
        elif isinstance(event, RunFinished):
            self.finished = event
        elif isinstance(event, RunStarted):
            self.started_event = event
            self.finished, self.stop_reason = None, None  # an earlier leg's end: this leg has not ended
        elif isinstance(event, Rewound):  # the earlier legs' steps past it are abandoned (run/rewinds.py)
            self.rewinds.append(event)
            self.recent = deque((m for m in self.recent if m.step <= event.to_step), maxlen=RATE_WINDOW)
            self.warnings = deque((w for w in self.warnings if w.step <= event.to_step), maxlen=SHOWN_WARNINGS)

    def update(self) -> list[Event]:
        """Read the status, then the events written up to it; returns those events. A line that is no event
        counts in ``appended_skipped``, the first named by its byte offset."""
        self.status = live_status(self.folder)
        pos, events = self.tail.offset, []
        for line in self.tail.poll_lines():
            read = read_line(line) if line.strip() else None
            if isinstance(read, str):
                self._skip(pos, read)
            elif read is not None:
                events.append(read)
                self.add(read)
            pos += len(line) + 1
        return events

    def _skip(self, offset: int, why: str) -> None:
        seen = self.appended_skipped
        if seen is None:
            where = f"{self.folder.events_file.name} at byte {offset}: {why}"
            self.appended_skipped = SkippedLines(1, where, checked_from=self.tail_start)
        else:
            self.appended_skipped = replace(seen, count=seen.count + 1)

    def snapshot(self, now: float | None = None) -> Snapshot:
        state = self.folder.read_state()
        last = self.recent[-1] if self.recent else None
        return Snapshot(
            run_id=self.folder.run_id,
            status=self.status,
            project=self.config.get("project_name") or self.started_event.project_name,
            model=self.config.get("model") or self.started_event.model,
            step=last.step if last else None,
            total=run_total(state, self.config),
            elapsed=run_duration(state, self.status, now, last.time if last else None),
            steps_per_s=_rate(list(self.recent)),
            metrics=dict(last.values) if last else {},
            kl_coef=self.config.get("rl_kl_coef"),
            warnings=[*self.warnings, *watcher_warnings(self.folder, self.status, now)],
            error=self.error,
            stop_reason=self.stop_reason,
            finished=self.finished,
            exit_reason=state.get("exit_reason"),
            appended_skipped=self.appended_skipped,
            rewinds=list(self.rewinds),
        )


def _rate(metrics: list[Metrics]) -> float | None:
    """Steps per second over the recent metrics events."""
    if len(metrics) < 2:
        return None
    first, last = metrics[0], metrics[-1]
    if first.time is None or last.time is None:
        return None
    try:
        seconds, steps = last.time - first.time, last.step - first.step
    except TypeError:
        return None
    return steps / seconds if seconds > 0 and steps > 0 else None


def render(snap: Snapshot) -> RenderableType:
    parts: list[RenderableType] = [_header(snap), _metrics_table(snap)]
    if snap.warnings:
        parts.append(_warnings_table(snap.warnings))
    if snap.error:
        parts.append(_error_panel(snap.error))
    if snap.appended_skipped:
        parts.append(_skipped_line(snap.appended_skipped))
    footer = _footer(snap)
    if footer:
        parts.append(footer)
    return Group(*parts)


def _skipped_line(skipped: SkippedLines) -> Text:
    return Text(clean_line(end_notice(skipped)), style=plain_palette().role("warning"))


def _header(snap: Snapshot) -> RenderableType:
    line = Text.assemble(
        (clean_line(snap.run_id), "bold"),
        "  ",
        (clean_line(snap.status), plain_palette().status(snap.status)),
        "  ",
        f"step {format_steps(snap.step, snap.total)}",
        "  ",
        f"elapsed {format_duration(snap.elapsed)}",
    )
    if snap.steps_per_s:
        line.append(f"  {snap.steps_per_s:.2f} steps/s")
        if snap.total and snap.step is not None and is_live(snap.status):
            line.append(f"  eta {format_duration((snap.total - snap.step) / snap.steps_per_s)}")
    sub = Text(clean_line(f"project {snap.project or '-'}  model {short_model(snap.model, 60)}"), style="dim")
    if snap.rewinds:
        return Group(line, sub, Text(clean_line(rewind_text(snap.rewinds)), style=plain_palette().role("warning")))
    return Group(line, sub)


def rewind_text(rewinds: list[Rewound]) -> str:
    """The latest rewind in a line: ``rewound 1x: step 38 -> checkpoint-20 (step 20) by rule kl_explosion;
    rl_kl_coef 0.1 -> 0.2``."""
    last = rewinds[-1]
    who = f"rule {last.rule}" if last.rule else str(last.by)
    text = f"rewound {len(rewinds)}x: step {last.from_step} -> {last.checkpoint or '-'} (step {last.to_step}) by {who}"
    changes = [
        f"{name} {change.get('from')} -> {change.get('to')}"
        for name, change in last.changes.items()
        if isinstance(change, dict)
    ]
    return text + (f"; {', '.join(changes)}" if changes else "")


def _number(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1000 else f"{value:.1f}"
    return clean_line(value)


def _metrics_table(snap: Snapshot) -> Table:
    table = Table(title="latest metrics", title_justify="left", box=None, show_header=False, pad_edge=False)
    table.add_column("metric", style=plain_palette().role("primary"))
    table.add_column("value", justify="right")
    if not snap.metrics:
        table.add_row("", Text("no metrics yet", style="dim"))
        return table
    for key, label in METRIC_ROWS:
        if key == "kl" and snap.kl_coef == 0:
            table.add_row(label, Text("not measured (rl_kl_coef = 0)", style="dim"))
        elif key in snap.metrics or key in ("reward", "loss"):
            table.add_row(label, Text(_number(snap.metrics.get(key))))
    for key in sorted(k for k in snap.metrics if k.startswith("rewards/") and k.endswith("/mean")):
        table.add_row(Text(clean_line(key)), Text(_number(snap.metrics[key])))
    return table


def _warnings_table(warnings: list[HealthWarning]) -> Table:
    table = Table(title="warnings", title_justify="left", box=None, pad_edge=False, header_style="bold")
    for name in ("step", "rule", "severity", "message"):
        table.add_column(name, overflow="fold")
    for w in warnings:
        message = Text(clean(w.message or ""))
        if w.advice:
            message.append(clean(f"\nadvice: {w.advice}"), style="italic")
        severity = Text(clean_line(w.severity), style=plain_palette().severity(w.severity))
        table.add_row(Text(clean_line(w.step)), Text(clean_line(w.rule)), severity, message)
    return table


def _error_panel(error: Error) -> Panel:
    error_style = plain_palette().role("error")
    body = Text(clean(error.message or ""), style=error_style)
    traceback = (error.traceback or "").strip().splitlines()
    if traceback:
        body.append(clean("\n" + "\n".join(traceback[-6:])), style="dim")
    return Panel(
        body,
        title=Text(clean_line(f"error ({error.kind}) at step {error.step}")),
        title_align="left",
        border_style=error_style,
    )


def _footer(snap: Snapshot) -> Text | None:
    palette = plain_palette()
    if snap.status is Status.LOST:
        return Text(
            "the trainer process is gone without finishing (reboot, SIGKILL or the OOM killer?)",
            style=palette.status(Status.LOST),
        )
    if snap.finished:
        reason = f": {snap.finished.reason}" if snap.finished.reason else ""
        return Text(clean(f"run {snap.finished.status} at step {snap.finished.step}{reason}"))
    if snap.status.is_final:
        return Text(clean(f"run {snap.status}" + (f": {snap.exit_reason}" if snap.exit_reason else "")))
    if snap.stop_reason:
        return Text(
            clean(f"stop requested ({snap.stop_reason}): finishing the step and saving a checkpoint"),
            style=palette.status(Status.STOPPING),
        )
    return None


def plain_console() -> Console:
    """The console of ``watch`` and its eval table: on a terminal Rich's own; in a pipe or a file one that never
    wraps a line (grep and awk read one line at a time, whatever width a terminal would have had)."""
    console = Console()
    return console if console.is_terminal else Console(soft_wrap=True)


def watch(folder: RunFolder, console: Console | None = None, refresh: float = 0.5, once: bool = False) -> Status:
    """Show the run live until it is no longer live; returns its status then.

    ``once`` prints a single frame. Lines at the end of events.jsonl that are no event are named first, in one
    line. On a console that is not a terminal (a pipe, a file) the first frame is followed by one line per new
    event. Ctrl-C leaves the view (the run goes on) and returns the current status.
    """
    console = console or plain_console()
    view = RunView(folder)
    if view.skipped:
        console.print(_skipped_line(view.skipped), soft_wrap=True)
    if once:
        console.print(render(view.snapshot()))
        return view.status
    try:
        return (_watch_live if console.is_terminal else _watch_lines)(view, console, refresh)
    except KeyboardInterrupt:
        return view.status


def _watch_live(view: RunView, console: Console, refresh: float) -> Status:
    with Live(render(view.snapshot()), console=console, auto_refresh=False) as live:
        while True:
            view.update()
            live.update(render(view.snapshot()), refresh=True)
            if not is_live(view.status):
                return view.status
            time.sleep(refresh)


def _watch_lines(view: RunView, console: Console, refresh: float) -> Status:
    from grpo_tui.services.lifecycle.foreground import EventPrinter

    console.print(render(view.snapshot()))
    printer = EventPrinter(console, view.folder)
    told = False
    while True:
        printer.show_all(view.update())
        if view.appended_skipped and not told:  # once: the dashboard's frame keeps the count, a pipe cannot
            told = True
            console.print(_skipped_line(view.appended_skipped), soft_wrap=True)
        if not is_live(view.status):
            return view.status
        time.sleep(refresh)
