"""A run's event stream folded into what the monitor draws, and the frozen values a viewer gets of it.

The reader thread (``run_reader.follow``) owns a ``RunStream``, whose ``poll()`` reads what was appended to
events.jsonl since the last call (by byte offset; an unfinished last line waits for the next poll) and
folds it into series that keep every charted point (float32, filled column by column: a 100k-step run
loads in about a second, a million steps fit in ~200 MB; the disk keeps full precision).

No other thread sees the series, or a metric first logged mid-run would change a dict under the loop
drawing it. Viewers get values that cannot change: a ``StreamView`` (last step, rates, keys, new warnings)
with each post, and ``ChartData`` (each series downsampled to its chart's width, min and max per bucket,
so a one-step spike is never dropped) only for a ``ChartRequest``: downsampling a million points is paid
at the pace charts are drawn, not at the pace of the posts.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import groupby
from types import MappingProxyType

from trainer_core.contract.event_log import EventTail
from trainer_core.contract.events import Event, HealthWarning, Metrics, UnknownEvent
from trainer_core.contract.run_folder import RunFolder

CHARTED = {"reward", "reward_std", "kl", "loss", "entropy", "completions/mean_length", "completions/clipped_ratio",
           "clip_ratio/region_mean", "grad_norm", "learning_rate", "num_tokens", "frac_reward_zero_std"}
CHUNK_BYTES = 2 * 1024 * 1024


def charted(key: str) -> bool:
    return key in CHARTED or (key.startswith("rewards/") and key.endswith("/mean"))


def downsample(steps, values, buckets: int) -> tuple[list[float], list[float], list[float]]:
    """(x, min, max) per bucket; at most ``buckets`` points, the extremes of every bucket preserved."""
    n = len(values)
    if n == 0:
        return [], [], []
    if n <= buckets:
        xs = list(steps[:n])
        vals = list(values)
        return xs, vals, vals
    xs, lows, highs = [], [], []
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        if hi <= lo:
            continue
        chunk = values[lo:hi]
        xs.append(steps[hi - 1] if b == buckets - 1 else steps[lo])
        lows.append(min(chunk))
        highs.append(max(chunk))
    return xs, lows, highs


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

    def snapshot(self, key: str, buckets: int) -> SeriesSnapshot:
        xs, lows, highs = downsample(self.steps, self.values, buckets)
        lows_t = tuple(lows)
        return SeriesSnapshot(key, len(self.values), buckets, tuple(xs), lows_t,
                              lows_t if highs is lows else tuple(highs), self.values[-1] if self.values else None)


# -- what the UI holds: values no thread changes --------------------------------------------------------

@dataclass(frozen=True)
class SeriesSnapshot:
    """One metric as a chart draws it: at most ``buckets`` points, each bucket's min and max.

    ``len()`` is the number of points in the whole series; ``steps`` are the buckets' steps, and the last
    one is the series' last step.
    """

    key: str
    count: int
    buckets: int
    steps: tuple = ()
    lows: tuple = ()
    highs: tuple = ()
    last_value: float | None = None

    def __len__(self) -> int:
        return self.count

    @property
    def last_step(self) -> int | None:
        return self.steps[-1] if self.steps else None

    @property
    def exact(self) -> bool:
        """Every point is its own bucket (lows and highs are the values): one line draws it."""
        return self.count <= self.buckets


@dataclass(frozen=True)
class ChartRequest:
    """What the UI will draw: ``(key, buckets)`` per chart. ``serial`` orders requests and their answers."""

    serial: int
    widths: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ChartData:
    """The answer to a ``ChartRequest``: a snapshot per asked-for key the stream has."""

    request: ChartRequest
    series: Mapping[str, SeriesSnapshot] = field(default_factory=lambda: MappingProxyType({}))

    def get(self, key: str, default=None):
        return self.series.get(key, default)

    def __getitem__(self, key: str) -> SeriesSnapshot:
        return self.series[key]

    def __contains__(self, key: str) -> bool:
        return key in self.series


EMPTY_CHARTS = ChartData(ChartRequest(0, ()))


@dataclass(frozen=True)
class StreamView:
    """Where the stream stands after a poll, with what is new since the previous view."""

    metrics_read: int = 0
    last: Metrics | None = None
    keys: tuple[str, ...] = ()  # charted metrics seen so far, in the order they first appeared
    steps_per_s: float | None = None
    tokens_per_s: float | None = None
    warnings: tuple[HealthWarning, ...] = ()
    lifecycle: tuple[Event, ...] = ()

    @property
    def step(self) -> int | None:
        return self.last.step if self.last is not None else None


@dataclass
class StreamUpdate:
    """What polls read since the reader last posted (the reader's own; posted as a ``StreamView``)."""

    steps: int = 0  # metrics events read
    warnings: list[HealthWarning] = field(default_factory=list)
    lifecycle: list[Event] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.steps or self.warnings or self.lifecycle)

    def add(self, other: StreamUpdate) -> None:
        self.steps += other.steps
        self.warnings += other.warnings
        self.lifecycle += other.lifecycle


class RunStream:
    def __init__(self, folder: RunFolder, chunk_bytes: int = CHUNK_BYTES):
        self.folder = folder
        self.tail = EventTail(folder.events_file)
        self.chunk_bytes = chunk_bytes
        self.series: dict[str, Series] = {}
        self.steps = array("l")  # steps of every metrics event, shared by the series that log at each one
        self.times = Series("d", shared=self.steps)  # unix seconds need double precision
        self.warnings: list[HealthWarning] = []
        self.lifecycle: list[Event] = []
        self.last_metrics: Metrics | None = None
        self.metrics_read = 0

    def poll(self) -> StreamUpdate:
        update = StreamUpdate()
        if self._size() == self.tail.offset:  # nothing new: no need to open the file
            return update
        while True:
            events = self.tail.poll(self.chunk_bytes)
            self._fold_all(events, update)
            if not events or self.tail.offset >= self._size():
                break
        return update

    def _fold_all(self, events: list[Event], update: StreamUpdate) -> None:
        for is_metrics, run in groupby(events, key=lambda e: isinstance(e, Metrics)):
            if is_metrics:
                for _, same_keys in groupby(run, key=lambda e: tuple(e.values)):
                    self._fold_metrics(list(same_keys), update)
            else:
                for event in run:
                    self._fold(event, update)

    def _fold_metrics(self, events: list[Metrics], update: StreamUpdate) -> None:
        """Events with the same keys, appended column by column."""
        steps = [e.step for e in events]
        before = len(self.steps)
        self.steps.extend(steps)
        for key in events[0].values:
            if not charted(key):
                continue
            series = self.series.get(key)
            if series is None:
                series = self.series[key] = Series(shared=self.steps)
            series.extend(steps, [e.values[key] for e in events], aligned=len(series.values) == before)
        self.times.extend(steps, [e.time for e in events], aligned=len(self.times.values) == before)
        for series in (*self.series.values(), self.times):
            series.settle()
        self.last_metrics = events[-1]
        self.metrics_read += len(events)
        update.steps += len(events)

    def _size(self) -> int:
        try:
            return self.folder.events_file.stat().st_size
        except OSError:
            return 0

    def _fold(self, event: Event, update: StreamUpdate) -> None:
        if isinstance(event, HealthWarning):
            self.warnings.append(event)
            update.warnings.append(event)
        elif not isinstance(event, UnknownEvent):  # run_started, checkpoint, stop, run_finished, error, summary
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

    # -- frozen views for another thread ---------------------------------------------------------------

    def view(self, new: StreamUpdate | None = None) -> StreamView:
        """Where the stream stands, with ``new``'s warnings and lifecycle events (cheap: no series copied)."""
        return StreamView(
            self.metrics_read, self.last_metrics, tuple(self.series), self.rate(), self.tokens_rate(),
            tuple(new.warnings) if new else (), tuple(new.lifecycle) if new else (),
        )

    def charts(self, request: ChartRequest) -> ChartData:
        """Each asked-for series that exists, downsampled to its chart's width (costs a pass over each)."""
        series = {}
        for key, buckets in request.widths:
            found = self.series.get(key)
            if found is not None and key not in series:
                series[key] = found.snapshot(key, max(int(buckets), 1))
        return ChartData(request, MappingProxyType(series))
