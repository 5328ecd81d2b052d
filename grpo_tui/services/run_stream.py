"""A run's event stream folded into what the monitor draws: metric series, warnings, lifecycle.

Runs in a worker thread: ``RunStream.poll()`` reads whatever was appended to events.jsonl since the last
call (by byte offset; an unfinished last line waits for the next poll) and returns one ``StreamUpdate``
for the whole batch, so the UI gets one message per poll, not one per line. Series keep every point of
the metrics the monitor can chart (float32; the disk keeps everything at full precision) and are filled
column by column, so a 100k-step run loads in about a second and a million steps fit in ~200 MB.
"""

from __future__ import annotations

import json
from array import array
from dataclasses import dataclass, field
from itertools import groupby

from trainer_core.events import EventTail
from trainer_core.run_folder import RunFolder

SKIP_KEYS = {"type", "time", "step"}
CHARTED = {"reward", "reward_std", "kl", "loss", "entropy", "completions/mean_length", "completions/clipped_ratio",
           "clip_ratio/region_mean", "grad_norm", "learning_rate", "num_tokens", "frac_reward_zero_std"}
CHUNK_BYTES = 2 * 1024 * 1024


def charted(key: str) -> bool:
    return key in CHARTED or (key.startswith("rewards/") and key.endswith("/mean"))


class Series:
    """One metric over steps, in compact arrays.

    While a metric is logged at every metrics event (the usual case) it shares the stream's one steps
    array and stores only float32 values: a million points cost 4 MB. A metric that skips a step or logs a
    null gets a steps array of its own from then on.
    """

    __slots__ = ("_steps", "values", "shared")

    def __init__(self, typecode: str = "f", shared: array | None = None):
        self.shared = shared
        self._steps = None if shared is not None else array("l")
        self.values = array(typecode)

    @property
    def steps(self) -> array:
        return self.shared if self._steps is None else self._steps

    def _own_steps(self) -> None:
        if self._steps is None:
            self._steps = array("l", self.shared[: len(self.values)])

    def extend(self, steps, values, aligned: bool = False) -> None:
        """Append a column; entries that are not numbers (null for NaN, strings) are skipped.

        ``aligned``: the shared steps array already ends with ``steps`` and this series was in step with it.
        """
        try:
            column = array(self.values.typecode, values)
        except TypeError:
            pairs = [(s, v) for s, v in zip(steps, values) if isinstance(v, (int, float)) and not isinstance(v, bool)]
            steps, column = [p[0] for p in pairs], array(self.values.typecode, [p[1] for p in pairs])
            aligned = False
        if self._steps is None and not aligned:
            self._own_steps()
        if self._steps is not None:
            self._steps.extend(steps)
        self.values.extend(column)

    def settle(self) -> None:
        """After a batch: a shared series that fell behind the shared steps keeps its own from now on."""
        if self._steps is None and len(self.values) != len(self.shared):
            self._own_steps()

    def __len__(self) -> int:
        return len(self.values)



@dataclass
class StreamUpdate:
    steps: int = 0  # metrics events read
    warnings: list[dict] = field(default_factory=list)
    lifecycle: list[dict] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.steps or self.warnings or self.lifecycle)


class RunStream:
    def __init__(self, folder: RunFolder, chunk_bytes: int = CHUNK_BYTES):
        self.folder = folder
        self.tail = EventTail(folder.events_file)
        self.chunk_bytes = chunk_bytes
        self.series: dict[str, Series] = {}
        self.steps = array("l")  # steps of every metrics event, shared by the series that log at each one
        self.times = Series("d", shared=self.steps)  # unix seconds need double precision
        self.warnings: list[dict] = []
        self.lifecycle: list[dict] = []
        self.last_metrics: dict = {}

    def poll(self) -> StreamUpdate:
        update = StreamUpdate()
        if self._size() == self.tail.offset:  # nothing new: no need to open the file
            return update
        while True:
            events = self._read()
            self._fold_all(events, update)
            if not events or self.tail.offset >= self._size():
                break
        return update

    def _fold_all(self, events: list[dict], update: StreamUpdate) -> None:
        for is_metrics, run in groupby(events, key=lambda e: e.get("type") == "metrics"):
            if is_metrics:
                for _, same_keys in groupby(run, key=lambda e: tuple(e)):
                    self._fold_metrics(list(same_keys), update)
            else:
                for event in run:
                    self._fold(event, update)

    def _fold_metrics(self, events: list[dict], update: StreamUpdate) -> None:
        """Events with the same keys, appended column by column."""
        steps = [e.get("step", 0) for e in events]
        before = len(self.steps)
        self.steps.extend(steps)
        for key in events[0]:
            if key in SKIP_KEYS or not charted(key):
                continue
            series = self.series.get(key)
            if series is None:
                series = self.series[key] = Series(shared=self.steps)
            series.extend(steps, [e[key] for e in events], aligned=len(series.values) == before)
        self.times.extend(steps, [e.get("time") for e in events], aligned=len(self.times.values) == before)
        for series in (*self.series.values(), self.times):
            series.settle()
        self.last_metrics = events[-1]
        update.steps += len(events)

    def _size(self) -> int:
        try:
            return self.folder.events_file.stat().st_size
        except OSError:
            return 0

    def _read(self) -> list[dict]:
        return self.tail.poll(self.chunk_bytes)

    def _fold(self, event: dict, update: StreamUpdate) -> None:
        kind = event.get("type")
        if kind == "warning":
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
