"""A run folder as a stream of JSON lines: what ``grpo-tui events`` prints for a remote viewer.

Two shapes, both resumable from byte offsets, so a viewer whose connection drops asks again from where its
copy ends and gets every byte once:

- ``event_lines``: the run's events, one ``{"offset", "end", "event"}`` per complete line of events.jsonl.
- ``mirror_lines`` (``--mirror``): everything a viewer needs to keep a copy of the folder
  (``executors/mirror.py``): the appended bytes of events.jsonl, samples.jsonl and trainer.log at their
  offsets, config.yaml and state.json whenever they change, the status and watcher alerts as judged here
  (only this machine can see the run's processes), and this machine's GPUs.

With ``follow`` both go on until the run is no longer live and everything written before that was sent.
The status is read before the files, so the last pass catches all that was written before the end.
Each mirror line is built from the message classes of ``grpo_tui.services.records.wire``, the module the
receiving side parses them with, so both ends share one definition of the stream.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

from orjson import loads

from grpo_tui.services.catalog.health import watcher_warnings
from grpo_tui.services.catalog.status import live_status
from grpo_tui.services.machine.gpus import list_gpus
from grpo_tui.services.records.wire import (
    APPENDED,
    WHOLE,
    Append,
    End,
    EventLine,
    GpuReport,
    Heartbeat,
    MirrorMessage,
    Reset,
    RunHeader,
    StatusReport,
    WholeFile,
)
from trainer_core.contract.run.folder import FORMAT_VERSION, RunFolder
from trainer_core.contract.run.status import Status

POLL_SECONDS = 0.2
SLOW_SECONDS = 1.0  # status and whole files
ALERT_SECONDS = 5.0  # watcher alerts and GPUs
HEARTBEAT_SECONDS = 5.0  # an idle stream still writes: a viewer that went away is noticed (EPIPE), not waited on
CHUNK = 1 << 20
TAIL_LIMITS = {"samples.jsonl": 256 * 1024, "trainer.log": 256 * 1024}  # a viewer shows only their ends
LINES_ONLY = ("events.jsonl", "samples.jsonl")  # sent a complete line at a time


def event_lines(
    folder: RunFolder, start: int = 0, follow: bool = False, sleep: Callable = time.sleep
) -> Iterator[bytes]:
    """``{"offset", "end", "event"}`` per complete event line from byte ``start``; a line that is not a JSON
    object is skipped (its bytes still count)."""
    offset = start
    while True:
        live = follow and live_status(folder).is_live
        sent = False
        for begin, line in _lines(folder.events_file, offset):
            offset = begin + len(line)
            try:
                record = loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                sent = True
                yield EventLine(begin, offset, record).encode()
        if not live:
            return
        if not sent:
            sleep(POLL_SECONDS)


def _lines(path, offset: int) -> Iterator[tuple[int, bytes]]:
    """(offset, line with its newline) for every complete line from ``offset``."""
    try:
        fh = open(path, "rb")
    except OSError:
        return
    with fh:
        fh.seek(offset)
        rest = b""
        while chunk := fh.read(CHUNK):
            buf = rest + chunk
            end = buf.rfind(b"\n") + 1
            pos = 0
            while pos < end:
                nl = buf.index(b"\n", pos) + 1
                yield offset, buf[pos:nl]
                offset += nl - pos
                pos = nl
            rest = buf[end:]


class _Appended:
    """One append-only file, sent from an offset."""

    def __init__(self, path: str, name: str, offset: int):
        self.path, self.name, self.offset = path, name, offset
        self.started = False

    def read(self) -> Iterator[MirrorMessage]:
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return
        if size < self.offset:  # truncated or replaced: start over
            self.offset = 0
            yield Reset(self.name)
        if not self.started:
            self.started = True
            limit = TAIL_LIMITS.get(self.name)
            if limit and size - self.offset > limit:
                self.offset = self._line_start(size - limit)
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            while self.offset < size:
                data = fh.read(min(CHUNK, size - self.offset))
                if not data:
                    return
                if self.name in LINES_ONLY:
                    cut = data.rfind(b"\n") + 1
                    if not cut:
                        if len(data) == CHUNK:  # a line longer than a chunk: send it in pieces
                            cut = len(data)
                        else:
                            return  # the last line is not complete yet
                    data = data[:cut]
                    fh.seek(self.offset + cut)
                yield Append(self.name, self.offset, data)
                self.offset += len(data)

    def _line_start(self, at: int) -> int:
        with open(self.path, "rb") as fh:
            fh.seek(at)
            fh.readline()
            return fh.tell()


def mirror_lines(
    folder: RunFolder, offsets: dict[str, int], follow: bool = False, sleep: Callable = time.sleep
) -> Iterator[bytes]:
    """The whole folder as a stream: see the module docstring. ``offsets``: what the viewer already holds."""
    yield RunHeader(folder.run_id, str(folder.path.resolve()), FORMAT_VERSION).encode()
    appended = [_Appended(os.path.join(folder.path, name), name, offsets.get(name, 0)) for name in APPENDED]
    stamps: dict[str, tuple] = {}
    last_status = last_gpus = None
    slow_at = alert_at = float("-inf")
    sent_at = time.monotonic()
    alerts: tuple = ()
    status = Status.STARTING  # read on the first pass, which is always a slow one
    while True:
        now = time.monotonic()
        slow = now - slow_at >= SLOW_SECONDS
        if slow:  # the status first: the files read after it hold everything written before it
            slow_at = now
            status = live_status(folder)
        sent = False
        for file in appended:  # appended bytes before the state that may say the run has ended
            for message in file.read():
                sent = True
                yield message.encode()
        if slow:
            for name in WHOLE:
                message = _whole(folder, name, stamps)
                if message:
                    yield message.encode()
            if now - alert_at >= ALERT_SECONDS or not status.is_live:
                alert_at = now
                alerts = tuple(watcher_warnings(folder, status))
                gpus = GpuReport(tuple(list_gpus())).encode()
                if gpus != last_gpus:
                    last_gpus = gpus
                    yield gpus
            report = StatusReport(status, alerts).encode()
            if report != last_status:
                last_status = report
                yield report
            if not follow or not status.is_live:
                yield End(status).encode()
                return
        if sent:
            sent_at = now
        elif now - sent_at >= HEARTBEAT_SECONDS:
            sent_at = now
            yield Heartbeat().encode()
        else:
            sleep(POLL_SECONDS)


def _whole(folder: RunFolder, name: str, stamps: dict) -> WholeFile | None:
    path = os.path.join(folder.path, name)
    try:
        info = os.stat(path)
        stamp = (info.st_ino, info.st_size, info.st_mtime_ns)
        if stamps.get(name) == stamp:
            return None
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    stamps[name] = stamp
    return WholeFile(name, data)
