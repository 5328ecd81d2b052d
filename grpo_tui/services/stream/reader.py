"""The monitor's reader: the one thread that owns a run's ``RunStream`` and posts frozen values of it.

It polls the events file, re-reads state, alerts, samples and the log once a second, and builds chart
snapshots for the newest ``ChartRequest`` a viewer put on its queue (the reader waits on it, so a request
wakes it at once): at once for a new request, and again as soon as steps arrive, at most every
CHART_SECONDS, so charts redraw with the data. Everything it posts is immutable: see ``run_stream``. The samples it
posts are the live history's: none of the steps a rewind abandoned (run/rewinds.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from queue import Empty, SimpleQueue
from types import MappingProxyType

from orjson import loads

from grpo_tui.services.catalog.health import watcher_warnings
from grpo_tui.services.catalog.status import live_status
from grpo_tui.services.stream.backlog import Backlog
from grpo_tui.services.stream.folded import ChartData, ChartRequest, RunStream, StreamUpdate, StreamView
from grpo_tui.services.stream.log_follow import LogFollower
from trainer_core.contract.run.events import HealthWarning
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.rewinds import live_samples
from trainer_core.contract.run.status import Status

POLL_SECONDS = 0.15
# while steps arrive, charts are rebuilt (and so redrawn) at most this often: a step waits at most this long
# for its frame, so it is on screen within a quarter of a second, and the app draws no more frames than that needs
CHART_SECONDS = 0.22
SLOW_SECONDS = 1.0  # state and status, samples, log
ALERT_SECONDS = 5.0  # stall and crash checks
POST_SECONDS = 0.25  # plain metrics are posted no more often (a viewer draws no faster than that anyway)
LOG_TAIL_BYTES = 256 * 1024  # a viewer shows the end of trainer.log
SAMPLES_TAIL_BYTES = 256 * 1024  # and the end of samples.jsonl


@dataclass(frozen=True)
class Slow:
    """What the reader re-reads once a second: state and status, watcher alerts, samples, new log text."""

    status: Status
    state: Mapping
    alerts: tuple[HealthWarning, ...]
    samples: tuple[dict, ...]
    log_text: str
    samples_skipped: int = 0  # lines among the newest samples that were none (Samples.skipped)
    samples_where: str | None = None


@dataclass(frozen=True)
class Post:
    """One message's worth from the reader. ``final``: the stream, handed over once it is read to its end
    (the reader has stopped and nothing changes it any more)."""

    view: StreamView
    slow: Slow | None = None
    charts: ChartData | None = None
    final: RunStream | None = None
    preview: bool = False  # state only, posted while a long backlog is read: the run's events come after


def latest_request(requests: SimpleQueue, current: ChartRequest | None, timeout: float = 0.0) -> ChartRequest | None:
    """The newest request on the queue (waiting up to ``timeout`` for one), else ``current``."""
    try:
        current = requests.get(timeout=timeout) if timeout else requests.get_nowait()
        while True:
            current = requests.get_nowait()
    except Empty:
        return current


def follow(
    folder: RunFolder,
    config: dict,
    requests: SimpleQueue,
    post: Callable[[Post], None],
    cancelled: Callable[[], bool],
    backlog: Backlog | None = None,
) -> None:
    """Read a run until it has ended (or ``cancelled()``), posting what changed: at once for warnings,
    lifecycle events and charts, at most every POST_SECONDS for plain metrics. Charts are built for the
    newest ``ChartRequest`` from ``requests`` when it arrives, and when steps were read (at most every
    CHART_SECONDS); waiting on the queue lets a request wake the reader. ``backlog``: the start of the
    stream, read meanwhile by a child process (``backlog.py``)."""
    log = LogFollower(folder.log_file, limit=LOG_TAIL_BYTES)
    if backlog is not None and backlog.proc is not None:  # the header need not wait for a long backlog
        state = folder.read_state()
        post(Post(StreamView(), Slow(live_status(folder, state), MappingProxyType(state), (), (), ""), preview=True))
    stream = backlog.stream(cancelled) if backlog is not None else RunStream(folder)
    # what a child read goes to the viewer as if this thread had read it
    pending = StreamUpdate(stream.metrics_read, list(stream.warnings), list(stream.lifecycle))
    request: ChartRequest | None = None
    answered, built = 0, None
    posted_at = slow_at = alerts_at = charts_at = float("-inf")
    stale = bool(pending.steps)  # steps were read since the charts were last built
    alerts: tuple[HealthWarning, ...] = ()
    while not cancelled():
        update = stream.poll()
        pending.add(update)
        stale = stale or bool(update.steps)
        now = time.monotonic()
        request = latest_request(requests, request)
        charts_due = request is not None and (request.serial > answered or (stale and now - charts_at >= CHART_SECONDS))
        slow = None
        # while steps arrive, the slow reads wait for the next charts (at most CHART_SECONDS): one post, one frame
        if now - slow_at >= SLOW_SECONDS and (charts_due or not stale or request is None):
            slow_at = now
            state = folder.read_state()
            status = live_status(folder, state)
            log_text = log.read()
            if now - alerts_at >= ALERT_SECONDS or not status.is_live:
                alerts_at = now
                alerts = tuple(watcher_warnings(folder, status, config=config))
            samples = read_samples_checked(folder)
            shown = tuple(live_samples(samples.samples, stream.rewinds))  # not those a rewind abandoned
            slow = Slow(status, MappingProxyType(state), alerts, shown, log_text, samples.skipped, samples.where)
        done = slow is not None and not slow.status.is_live and not update
        charts = None
        if request is not None and (charts_due or done) and (request.serial, stream.metrics_read) != built:
            charts, answered, built = stream.charts(request), request.serial, (request.serial, stream.metrics_read)
            charts_at, stale = now, False
        # plain metrics wait for the next charts when charts are asked for: one message, one frame
        plain_due = pending and now - posted_at >= POST_SECONDS and (request is None or not stale)
        if slow or charts or done or pending.warnings or pending.lifecycle or plain_due:
            post(Post(stream.view(pending), slow, charts, stream if done else None))
            pending, posted_at = StreamUpdate(), now
        if done:
            return
        wait = POLL_SECONDS if not stale or request is None else charts_at + CHART_SECONDS - time.monotonic()
        request = latest_request(requests, request, timeout=min(POLL_SECONDS, max(wait, 0.005)))


def read_samples(folder: RunFolder, limit: int = 50) -> list[dict]:
    """The newest scored completions (reads the end of samples.jsonl only)."""
    return list(read_samples_checked(folder, limit).samples)


@dataclass(frozen=True)
class Samples:
    """The newest samples, and the lines among them that were none (``skipped``; the first: ``where``)."""

    samples: tuple[dict, ...] = ()
    skipped: int = 0
    where: str | None = None


def read_samples_checked(folder: RunFolder, limit: int = 50) -> Samples:
    """The newest scored completions (reads the end of samples.jsonl only), with the lines among the last
    ``limit`` that are no sample (not JSON, or not an object) counted and the first named by its byte offset."""
    try:
        with open(folder.samples_file, "rb") as fh:
            size = fh.seek(0, 2)
            base = max(0, size - SAMPLES_TAIL_BYTES)
            fh.seek(base)
            data = fh.read(size - base)
    except OSError:
        return Samples()
    data = data[: data.rfind(b"\n") + 1]  # a torn last line is not read yet
    if base:  # the first line read from the middle of the file is not whole
        cut = data.find(b"\n") + 1
        data, base = data[cut:], base + cut
    lines = data.split(b"\n")[:-1][-limit - 1 :]
    at = base + len(data) - sum(len(line) + 1 for line in lines)
    out, skipped, where = [], 0, None
    for line in lines:
        record = _sample(line)
        if isinstance(record, dict):  # a sample is an object; a line of anything else is no sample
            out.append(record)
        elif record is not None:
            skipped += 1
            where = where or f"{folder.samples_file.name} at byte {at}: {record}"
        at += len(line) + 1
    return Samples(tuple(out[-limit:]), skipped, where)


def _sample(line: bytes) -> dict | str | None:
    """A line's sample; else why it is none (a blank line: None, no sample and no bad one)."""
    if not line.strip():
        return None
    try:
        record = loads(line)
    except (ValueError, RecursionError):
        return "not JSON"
    return record if isinstance(record, dict) else f"a JSON {type(record).__name__}, not an object"
