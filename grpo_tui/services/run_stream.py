"""A run's event stream folded into what the monitor draws: metric series, warnings, lifecycle.

Runs in a worker thread: ``RunStream.poll()`` reads whatever was appended to events.jsonl since the last
call (by byte offset; an unfinished last line waits for the next poll) and returns one ``StreamUpdate``
for the whole batch, so the UI gets one message per poll, not one per line. Series keep every point (the
disk holds the full history anyway; a chart downsamples to its width).
"""

from __future__ import annotations

import json
from array import array
from dataclasses import dataclass, field

from trainer_core.events import EventTail
from trainer_core.run_folder import RunFolder

SKIP_KEYS = {"type", "time", "step"}


class Series:
    """One metric over steps, in compact arrays (a million points is ~16 MB)."""

    __slots__ = ("steps", "values")

    def __init__(self):
        self.steps = array("l")
        self.values = array("d")

    def append(self, step: int, value: float) -> None:
        self.steps.append(step)
        self.values.append(value)

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def last(self) -> float | None:
        return self.values[-1] if self.values else None


@dataclass
class StreamUpdate:
    metrics: list[dict] = field(default_factory=list)
    warnings: list[dict] = field(default_factory=list)
    lifecycle: list[dict] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.metrics or self.warnings or self.lifecycle)


class RunStream:
    def __init__(self, folder: RunFolder, chunk_bytes: int = 64 * 1024 * 1024):
        self.folder = folder
        self.tail = EventTail(folder.events_file)
        self.chunk_bytes = chunk_bytes
        self.series: dict[str, Series] = {}
        self.times = Series()
        self.warnings: list[dict] = []
        self.lifecycle: list[dict] = []
        self.last_metrics: dict = {}

    def poll(self) -> StreamUpdate:
        update = StreamUpdate()
        while True:
            events = self._read()
            for event in events:
                self._fold(event, update)
            if not events or self.tail.offset >= self._size():
                break
        return update

    def _size(self) -> int:
        try:
            return self.folder.events_file.stat().st_size
        except OSError:
            return 0

    def _read(self) -> list[dict]:
        return self.tail.poll(self.chunk_bytes)

    def _fold(self, event: dict, update: StreamUpdate) -> None:
        kind = event.get("type")
        if kind == "metrics":
            step = event.get("step", 0)
            for key, value in event.items():
                if key in SKIP_KEYS or not isinstance(value, (int, float)) or isinstance(value, bool):
                    continue
                series = self.series.get(key)
                if series is None:
                    series = self.series[key] = Series()
                series.append(step, float(value))
            if isinstance(event.get("time"), (int, float)):
                self.times.append(step, event["time"])
            self.last_metrics = event
            update.metrics.append(event) if len(update.metrics) < 1000 else None
        elif kind == "warning":
            self.warnings.append(event)
            update.warnings.append(event)
        elif kind in ("run_started", "checkpoint", "stop_requested", "run_finished", "error", "summary"):
            self.lifecycle.append(event)
            update.lifecycle.append(event)

    def rate(self, window: int = 20) -> float | None:
        """Steps per second over the last ``window`` logged steps."""
        n = len(self.times)
        if n < 2:
            return None
        i = max(0, n - window)
        dt = self.times.values[-1] - self.times.values[i]
        return (self.times.steps[-1] - self.times.steps[i]) / dt if dt > 0 else None

    def tokens_rate(self, window: int = 20) -> float | None:
        tokens = self.series.get("num_tokens")
        if tokens is None or len(tokens) < 2 or len(self.times) < 2:
            return None
        i = max(0, min(len(tokens), len(self.times)) - window)
        dt = self.times.values[-1] - self.times.values[i]
        return (tokens.values[-1] - tokens.values[i]) / dt if dt > 0 else None


def read_samples(folder: RunFolder, limit: int = 50) -> list[dict]:
    """The newest scored completions (reads the end of samples.jsonl only)."""
    try:
        with open(folder.samples_file, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - 256 * 1024))
            lines = fh.read().splitlines()[-limit - 1:]
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out[-limit:]
