"""Sending a run's alerts, so that a run nobody is watching still reaches someone.

The run's root process (``run_root.py``, machine 0) starts a ``Notifier`` before the trainer: it follows
events.jsonl as the trainer writes it (``EventTail``: by byte offset, a torn last line kept for later) and
turns a ``warning`` at or above a URL's severity, an auto-stop (``stop_requested`` ``auto-stop: …``) and the
run's end (``run_finished``; a failed run with its crash rule, as the watcher would judge it) into alerts,
sent to each URL by ``trainer_core/contract/alerts/delivery.py`` (a webhook's POST, or apprise for the
service an apprise URL names; ``targets.py`` says where and in which body). It runs in the root, not the
app, so detached, remote and Slurm runs notify with no app open.

Sending never blocks or fails training: each URL has a queue and a thread of its own (a dead URL does not
hold up a live one), each request a timeout, each alert a few attempts with backoff, and then one
``notify_failed`` event per URL per run says why (later failures of that URL are not written again). At the
end the root gives the queues a bounded time to drain, then exits with the code it would have had anyway.
Events are appended like the trainer's (``JsonlWriter``: each line under an exclusive lock of the file, a
failed write undone to where that line began), so the two writers' lines never mix and neither cuts the
other's. Stdlib only, and apprise for its URLs: the root stays light.
"""

from __future__ import annotations

import dataclasses
import queue
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from trainer_core.contract.alerts.delivery import DeliveryError, deliver
from trainer_core.contract.alerts.targets import Alert, SettingsError, Target, load_settings, run_targets, settings_file
from trainer_core.contract.config.notify_urls import secure_config
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.health.monitor import ADVICE
from trainer_core.contract.health.remedy_plan import REMEDY_PREFIX
from trainer_core.contract.run.backoff import Backoff
from trainer_core.contract.run.crash import classify_crash
from trainer_core.contract.run.event_log import EventTail, EventWriter, scan_events
from trainer_core.contract.run.events import (
    Error,
    Event,
    EventType,
    HealthWarning,
    NotifyFailed,
    Rewound,
    RunFinished,
    StopRequested,
)
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import end_summary, log_tail

FLUSH_S = 15.0  # how long the end of a run waits for its alerts to go out
TIMEOUT_S = 5.0  # per attempt
BACKOFF = Backoff(1.0, factor=3.0, cap=3.0)  # waits of 1 s, then 3 s, between attempts
ATTEMPTS = 3
POLL_S = 0.5  # how often events.jsonl is read
QUEUE_LIMIT = 100  # alerts waiting per URL; more are dropped (a URL that cannot keep up)
AUTO_STOP = re.compile(r"auto-stop: (?P<rule>[\w-]+) at step (?P<step>\d+)")
UNMATCHED = (
    "only the masked form of this URL is in the run's config.yaml, with no real URL behind it in notify.json "
    "(a config copied from another run?); pass the real URL with --notify or put it in the settings file"
)


class _Sender:
    """One URL's queue and thread: alerts go out in order, each with its attempts, never holding up another URL."""

    def __init__(self, target: Target, on_failure: Callable, attempts: int, timeout: float, backoff: Backoff):
        self.target = target
        self.on_failure = on_failure
        self.attempts, self.timeout, self.backoff = attempts, timeout, dataclasses.replace(backoff)
        self.queue: queue.Queue[Alert | None] = queue.Queue(QUEUE_LIMIT)
        self.abort = threading.Event()
        self.dropped = 0
        self.failed = False  # once an alert could not be sent, later ones get one attempt each
        self.thread = threading.Thread(target=self._run, name=f"notify {target.masked}", daemon=True)

    def submit(self, alert: Alert) -> None:
        try:
            self.queue.put_nowait(alert)
        except queue.Full:
            self.dropped += 1

    def finish(self) -> None:
        """No more alerts: the thread ends once the queue is sent."""
        while True:
            try:
                self.queue.put(None, timeout=0.1)
                return
            except queue.Full:
                if not self.thread.is_alive():
                    return

    def _run(self) -> None:
        while True:
            alert = self.queue.get()
            if alert is None:
                return
            try:
                self._deliver(alert)
            except Exception as exc:  # a bug here must not end the sending of the other alerts
                self.on_failure(self.target, alert, f"{type(exc).__name__}: {exc}", 1)

    def _deliver(self, alert: Alert) -> None:
        error, attempt = DeliveryError("not sent", False), 0
        attempts = 1 if self.failed else self.attempts
        self.backoff.reset()
        for attempt in range(1, attempts + 1):
            if self.abort.is_set():
                return
            try:
                deliver(self.target, alert, self.timeout)
                self.failed = False
                return
            except DeliveryError as exc:
                error = exc
            if not error.retry or attempt == attempts:
                break
            delay = error.wait if error.wait is not None else self.backoff.next()
            if self.abort.wait(delay):
                break
        self.failed = True
        self.on_failure(self.target, alert, error.reason, attempt)


class Notifier:
    """Follows a run's events from ``start_offset`` and sends its alerts to ``targets`` (see the module)."""

    def __init__(
        self,
        folder: RunFolder,
        targets: list[Target],
        *,
        run_id: str,
        host: str,
        project: str | None = None,
        start_offset: int = 0,
        attempts: int = ATTEMPTS,
        timeout: float = TIMEOUT_S,
        backoff: Backoff = BACKOFF,
        poll_s: float = POLL_S,
    ):
        self.folder = folder
        self.run_id, self.host, self.project = run_id, host, project
        self.poll_s = poll_s
        self.tail = EventTail(folder.events_file, start_offset)
        self.senders = [_Sender(t, self._failed, attempts, timeout, backoff) for t in targets]
        self.reported = {str(e.url) for e in _notify_failures(folder, start_offset)}
        self.errors: list[Error] = []
        self.severities: dict[str, Severity] = {}
        self.wrote = False  # a notify_failed: the end's summary may need computing again
        self._step = 0
        self._lock = threading.Lock()
        self._poll_lock = threading.Lock()
        self._closing = threading.Event()
        self._follower = threading.Thread(target=self._follow, name="notify events", daemon=True)

    @property
    def targets(self) -> list[Target]:
        return [s.target for s in self.senders]

    def start(self) -> Notifier:
        if self.senders:
            for sender in self.senders:
                sender.thread.start()
            self._follower.start()
        return self

    def close(self, deadline_s: float = FLUSH_S, abort: Callable[[], bool] = lambda: False) -> None:
        """Send what the run wrote until now, waiting at most ``deadline_s`` (less if ``abort()`` turns true:
        a second signal to the root); a URL still sending then is reported as not reached."""
        deadline = time.monotonic() + deadline_s
        self._closing.set()
        if self._follower.is_alive():
            self._follower.join(timeout=max(self.poll_s * 4, 2.0))
        if self.senders:
            self._poll()
        for sender in self.senders:
            sender.finish()
        for sender in self.senders:
            while sender.thread.is_alive() and time.monotonic() < deadline and not abort():
                sender.thread.join(timeout=0.1)
        for sender in self.senders:
            if sender.thread.is_alive():
                sender.abort.set()
                why = f"still sending when the {deadline_s:g} s the run's end gives its last alerts were up"
                self._failed(sender.target, None, why, 0)
            if sender.dropped:
                dropped = f"{sender.dropped} alert(s) for {sender.target.masked} dropped: its queue was full"
                print(f"notify: {dropped}", file=sys.stderr, flush=True)
        if self.wrote:
            _refresh_summary(self.folder)

    def report(self, url: str, reason: str, alert: str | None = None, attempts: int = 0) -> None:
        """Write one ``notify_failed`` for ``url`` (masked already), unless this run has one for it."""
        with self._lock:
            if url in self.reported:
                return
            self.reported.add(url)
            what = f" {alert}" if alert else ""
            print(f"notify: could not send{what} to {url}: {reason}", file=sys.stderr, flush=True)
            try:
                with EventWriter(self.folder.events_file) as writer:
                    writer.emit(NotifyFailed(url=url, reason=reason, alert=alert, attempts=attempts, step=self._step))
            except OSError as exc:  # a full disk: the run's own records matter more
                print(f"notify: could not record that: {exc}", file=sys.stderr, flush=True)
                return
            self.wrote = True

    # -- events into alerts -----------------------------------------------------------------------------
    def _failed(self, target: Target, alert: Alert | None, reason: str, attempts: int) -> None:
        self.report(target.masked, reason, alert.event if alert else None, attempts)

    def _follow(self) -> None:
        while not self._closing.is_set():
            self._poll()
            self._closing.wait(self.poll_s)

    def _poll(self) -> None:
        with self._poll_lock:
            try:
                events = self.tail.poll()
            except OSError:
                return
            for event in events:
                try:
                    alert = self.alert_for(event)
                except Exception as exc:  # a bug in building one alert must not stop the others
                    print(f"notify: no alert for {event.type}: {type(exc).__name__}: {exc}", file=sys.stderr)
                    continue
                if alert is not None:
                    for sender in self.senders:
                        if sender.target.wants(alert):
                            sender.submit(alert)

    def _alert(self, event_kind, **fields) -> Alert:
        return Alert(event_kind, self.run_id, self.host, project=self.project, **fields)

    def alert_for(self, event: Event) -> Alert | None:
        """The alert ``event`` makes (None for most events); remembers what a later alert needs."""
        step = getattr(event, "step", None)
        if isinstance(step, int):
            self._step = max(self._step, step)
        if isinstance(event, HealthWarning):
            self.severities[str(event.rule)] = event.severity
            return self._alert(
                "warning",
                rule=str(event.rule),
                severity=event.severity,
                step=event.step,
                message=event.message,
                advice=event.advice,
            )
        if isinstance(event, Error):
            self.errors.append(event)
        elif isinstance(event, StopRequested) and (event.reason or "").startswith("auto-stop"):
            match = AUTO_STOP.match(event.reason or "")
            rule = match.group("rule") if match else None
            return self._alert(
                "auto_stop",
                rule=rule,
                severity=self.severities.get(rule or "", Severity.WARN),
                step=event.step,
                message=f"--stop-on {rule}: the run saves a checkpoint and ends as stopped."
                if rule
                else f"{event.reason}: the run saves a checkpoint and ends as stopped.",
                advice=ADVICE.get(rule or "", ""),
            )
        elif isinstance(event, Rewound):
            return self._rollback_alert(event)
        elif isinstance(event, RunFinished):
            if (event.reason or "").startswith(REMEDY_PREFIX) and Status.parse(event.status, None) is Status.STOPPED:
                return None  # a leg a remedy ended: its rollback is the news, and the run goes on
            return self._end_alert(event)
        return None

    def _rollback_alert(self, event: Rewound) -> Alert:
        changes = ", ".join(f"{k} {v.get('from')!r} -> {v.get('to')!r}" for k, v in event.changes.items())
        who = f"the {event.rule} remedy" if event.rule else str(event.by)
        message = f"{who} rolled the run back from step {event.from_step} to {event.checkpoint}"
        message += f" ({event.reason.rstrip('.')})" if event.reason else ""
        message += f"; it goes on with {changes}." if changes else "; it goes on."
        return self._alert(
            "rollback",
            rule=event.rule,
            severity=Severity.WARN,
            step=event.to_step,
            message=message,
            advice=f"Watch it: grpo-tui watch {self.run_id}",
        )

    def _end_alert(self, event: RunFinished) -> Alert:
        status = Status.parse(event.status, None)
        reason = event.reason or ""
        if status is Status.FAILED:
            crash = classify_crash(log_tail(self.folder.log_file), self.errors, event)
            error = self.errors[-1] if self.errors else None
            cause = (error.message.splitlines() or [""])[0] if error else reason
            message = f"{crash.message} {cause}".strip() if crash and cause not in crash.message else cause
            return self._alert(
                "run_end",
                rule=str(crash.rule) if crash else None,
                severity=Severity.CRITICAL,
                step=event.step,
                message=message or "the run failed",
                advice=crash.advice if crash else "See its trainer.log.",
                status=str(event.status),
                error_kind=str(error.kind) if error else None,
            )
        if status is Status.STOPPED:
            match = AUTO_STOP.match(reason)
            return self._alert(
                "run_end",
                rule=match.group("rule") if match else None,
                severity=Severity.WARN,
                step=event.step,
                message=f"Stopped: {reason.rstrip('.')}." if reason else "Stopped.",
                advice=f"Continue it with: grpo-tui launch --resume {self.run_id}",
                status=str(event.status),
            )
        return self._alert(
            "run_end",
            severity=Severity.INFO,
            step=event.step,
            message=f"Completed at step {event.step}." + (f" {reason}" if reason else ""),
            status=str(event.status),
        )


def _notify_failures(folder: RunFolder, end: int) -> list[NotifyFailed]:
    """The ``notify_failed`` events of the run's earlier legs (before ``end``): once per URL per run."""
    events, _ = scan_events(folder.events_file, (EventType.NOTIFY_FAILED,), 0, end)
    return [e for e in events if isinstance(e, NotifyFailed)]


def _refresh_summary(folder: RunFolder) -> None:
    """The runs list trusts a summary only while events.jsonl has the size it was computed at
    (run_summary.valid_summary): after a notify_failed written past the end, compute it again."""
    try:
        state = folder.read_state()
        status, summary = Status.parse(state.get("status")), state.get("summary")
        if status is None or not status.is_final or not isinstance(state.get("ended"), (int, float)):
            return
        if not isinstance(summary, dict) or summary.get("events_size") != _complete_size(folder.events_file):
            folder.write_state(summary=end_summary(folder, status, state["ended"]))
    except Exception as exc:  # the summary is a cache: a reader computes it again without one
        print(f"notify: could not refresh the run's summary: {exc}", file=sys.stderr, flush=True)


def _complete_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def start_for_run(
    folder: RunFolder, config: RunConfig, *, settings_path: Path | None = None, **options
) -> Notifier | None:
    """Hide the run's URLs (config.yaml masked, the real ones in notify.json), read the settings file, and start
    a Notifier for what the run writes from now on; None when there is nowhere to send to. Must run before the
    trainer starts (it rewrites config.yaml). ``options``: ``Notifier``'s (timeouts, attempts, backoff)."""
    offset = _complete_size(folder.events_file)
    secure_config(folder.path, config)  # the real URLs this process was given, kept for the root and a resume
    on_disk = RunConfig.load(folder.config_file) if folder.config_file.exists() else None
    masked = secure_config(folder.path, on_disk) if on_disk is not None else None
    if masked is not None:
        folder.save_config(masked)
    problems: list[tuple[str, str]] = []
    try:
        settings = load_settings(settings_path)
    except SettingsError as exc:
        settings = None
        problems.append((str(settings_path or settings_file()), f"the settings file is not used: {exc}"))
    targets, unmatched = run_targets(folder.path, config, settings)
    problems += [(url, UNMATCHED) for url in unmatched]
    if not targets and not problems:
        return None
    notifier = Notifier(
        folder,
        targets,
        run_id=folder.run_id,
        host=socket.gethostname(),
        project=config.project_name,
        start_offset=offset,
        **options,
    )
    for url, reason in problems:
        notifier.report(url, reason)
    return notifier.start()


def safe_start(folder: RunFolder, config: RunConfig) -> Notifier | None:
    """``start_for_run`` that never fails the run: a problem is one line in trainer.log."""
    try:
        return start_for_run(folder, config)
    except Exception as exc:
        print(f"notify: alerts are off for this run: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return None


__all__ = ["FLUSH_S", "DeliveryError", "Notifier", "safe_start", "start_for_run"]
