"""A run's event stream folded into what the monitor draws, and the frozen values a viewer gets of it.

The reader thread (``run_reader.follow``) owns a ``RunStream``, whose ``poll()`` reads what was appended to
events.jsonl since the last call (by byte offset; an unfinished last line waits for the next poll) and
folds it into series (``series.py``) that keep every charted point (float32, filled column by column, never
through an event object per line; a million steps fit in ~200 MB; the disk keeps full precision). Metrics lines
take a fast path: msgspec decodes each into a record of the keys seen so far, checking each field's kind
(``metrics_lines.py``), and a run of such records goes in a column at a time. Every line it does not take is
parsed by orjson and judged as ``decode`` judges it (``_fold_all``, the reference path), which counts and names
what it rejects; ``RunStream(..., fast=False)`` reads every line that way, for the benchmark and the tests that
compare the two. A long backlog is folded by a child process (``backlog.py``), which pickles the stream back.

No other thread sees the series, or a metric first logged mid-run would change a dict under the loop
drawing it. Viewers get values that cannot change: a ``StreamView`` (last step, rates, keys, new warnings,
new lifecycle events, among them the held-out ``eval`` events, which ``StreamView.evals`` picks out) with each post, and ``ChartData`` (each series downsampled to its chart's width, min, max and mean per
block, so a one-step spike is never dropped) for a ``ChartRequest``. Blocks are kept between calls
(``buckets.py``), so a chart of a million points costs its width, not a pass over the points.

A ``rewound`` event (run/rewinds.py) cuts every series back to its ``to_step``: the cut-off points are the
abandoned stretch, kept apart (one stretch per rewind) so a chart draws the live series with the abandoned stretch
dimmed beside it and the rewind's step marked; the warnings past the step move to ``abandoned_warnings``. Only
the abandoned points are touched: a rewind costs its stretch, not a pass over the series.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from orjson import loads

from grpo_tui.services.stream.buckets import BlockCache
from grpo_tui.services.stream.metrics_lines import REFUSED, RESERVED, UNSET, MetricsLines, step_of, time_of
from grpo_tui.services.stream.rejected_lines import MAX_STEP, line_of_rejected
from grpo_tui.services.stream.series import Series, SeriesSnapshot
from trainer_core.contract.health.sample_stats import TOOL_SUCCESS, TURNS_MEAN
from trainer_core.contract.health.tools import CALL_FREQUENCY, FAILURE_FREQUENCY
from trainer_core.contract.run.event_log import EventTail
from trainer_core.contract.run.events import (
    Eval,
    Event,
    HealthWarning,
    Metrics,
    Rewound,
    RunStarted,
    UnknownEvent,
    decode,
    problem,
)
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.legs import per_second

TOOL_METRICS = (CALL_FREQUENCY, FAILURE_FREQUENCY, TURNS_MEAN, TOOL_SUCCESS)
"""An agentic run's charts: tool calls per episode, the share that failed, turns per episode, tool use that succeeded."""
CHARTED = {
    "reward",
    "reward_std",
    "kl",
    "loss",
    "entropy",
    "completions/mean_length",
    "completions/clipped_ratio",
    "clip_ratio/region_mean",
    "grad_norm",
    "learning_rate",
    "num_tokens",
    "frac_reward_zero_std",
    *TOOL_METRICS,
}
CHUNK_BYTES = 2 * 1024 * 1024


def charted(key: str) -> bool:
    return key in CHARTED or (key.startswith("rewards/") and key.endswith("/mean"))


# -- what the UI holds: values no thread changes --------------------------------------------------------


@dataclass(frozen=True)
class ChartRequest:
    """What the UI will draw: ``(key, buckets)`` per chart, over the last ``window`` steps (None: all).
    ``serial`` orders requests and their answers."""

    serial: int
    widths: tuple[tuple[str, int], ...]
    window: int | None = None


@dataclass(frozen=True)
class ChartData:
    """The answer to a ``ChartRequest``: a snapshot per asked-for key the stream has (its live history), the
    abandoned stretches of each (one per rewind that cut it, oldest first), and the steps each rewind went back to."""

    request: ChartRequest
    series: Mapping[str, SeriesSnapshot] = field(default_factory=lambda: MappingProxyType({}))
    abandoned: Mapping[str, tuple[SeriesSnapshot, ...]] = field(default_factory=lambda: MappingProxyType({}))
    rewinds: tuple[int, ...] = ()

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
    skipped: int = 0  # events.jsonl lines that were no event (RunStream.skipped): the rest were all read
    skipped_where: str | None = None  # the first of them: ``events.jsonl line N: why``

    @property
    def step(self) -> int | None:
        return self.last.step if self.last is not None else None

    @property
    def evals(self) -> tuple[Eval, ...]:
        """The held-out evaluations among the new lifecycle events (rare lines: decoded, never on the fast path)."""
        return tuple(e for e in self.lifecycle if isinstance(e, Eval))


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
        for event in other.lifecycle:  # a later rewind abandons the warnings read before it (run/rewinds.py)
            if isinstance(event, Rewound):
                self.warnings = [w for w in self.warnings if w.step <= event.to_step]
        self.warnings += other.warnings
        self.lifecycle += other.lifecycle


class RunStream:
    """``fast``: metrics lines go through ``MetricsLines`` first (False: every line the reference way, as the
    benchmark and the tests compare)."""

    def __init__(self, folder: RunFolder, chunk_bytes: int = CHUNK_BYTES, fast: bool = True):
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
        self.rejected = 0  # lines of a known type whose fields had the wrong kind: skipped, counted
        self.first_rejected: tuple[int, str] | None = None  # (line, why) of the first of them
        self._why: str | None = None  # the first rejection's reason, until its line is found
        self._fast = MetricsLines(charted) if fast else None
        self.rewinds: list[Rewound] = []
        self.abandoned: list[dict[str, Series]] = []  # per rewind: each series' abandoned stretch
        self.abandoned_warnings: list[HealthWarning] = []

    @property
    def skipped(self) -> int:
        """Complete lines of events.jsonl that were no event: not a JSON object, or a known type with fields
        of the wrong kind. Every other line was read."""
        return self.tail.bad_lines + self.rejected

    def skipped_where(self) -> str | None:
        """Where the first skipped line is and why (``events.jsonl line N: why``); None when none was skipped."""
        found = [f for f in (self.tail.first_bad, self.first_rejected) if f is not None]
        if not found:
            return None
        line, why = min(found)
        return f"{self.folder.events_file.name} line {line}: {why}"

    def poll(self) -> StreamUpdate:
        update = StreamUpdate()
        if self._size() == self.tail.offset:  # nothing new: no need to open the file
            return update
        while True:
            start, lines = self.tail.offset, self.tail.lines
            self._fold_lines(self.tail.poll_lines(self.chunk_bytes), lines + 1, update)
            if self._why is not None:
                self.first_rejected = (
                    lines + line_of_rejected(self.folder.events_file, start, self.tail.offset),
                    self._why,
                )
                self._why = None
            if self.tail.offset == start or self.tail.offset >= self._size():  # nothing more to read now
                break
        return update

    def _fold_lines(self, lines: list[bytes], first: int, update: StreamUpdate) -> None:
        """Lines (the first is line ``first``) in order: runs of metrics lines the fast path takes go in column
        by column from their records; every other line is parsed and folded the reference way."""
        fast, parse = self._fast, self.tail.parse
        decode = fast.decode if fast is not None else None
        batch: list = []  # the fast path's records of consecutive metrics lines
        slow: list[dict] = []  # the reference path's records of consecutive other lines
        last = b""
        for number, line in enumerate(lines, first):
            if decode is not None:
                try:
                    record = decode(line)
                except REFUSED:
                    pass
                else:
                    if slow:
                        self._fold_all(slow, update)
                        slow = []
                    batch.append(record)
                    last = line
                    continue
                if batch:
                    self._fold_records(batch, last, update)
                    batch = []
            parsed = parse(line, number)
            if parsed is None:
                continue
            slow.append(parsed)
            if fast is not None and decode is not None and fast.teaches(parsed):  # its keys make the next ones fast
                self._fold_all(slow, update)
                slow, decode = [], fast.decode  # None past MAX_KEYS keys: the rest the reference way
        if batch:
            self._fold_records(batch, last, update)
        if slow:
            self._fold_all(slow, update)

    def _fold_records(self, records: list, last_line: bytes, update: StreamUpdate) -> None:
        """The fast path's records of consecutive metrics lines, appended column by column (``_fold_metrics``
        for records the fast path made: a key a line lacks is ``UNSET``, which no series takes)."""
        fast = self._fast
        assert fast is not None  # only the fast path makes these
        count = len(records)
        steps = list(map(step_of, records))
        before = len(self.steps)
        self.steps.extend(steps)
        for key, value_of in fast.columns:
            column = list(map(value_of, records))
            if column[0] is UNSET and column.count(UNSET) == count:
                continue  # no line of the run has the key
            series = self.series.get(key)
            if series is None:
                series = self.series[key] = Series(shared=self.steps)
            series.extend(steps, column, aligned=len(series.values) == before, typed=True)
        times = list(map(time_of, records))
        self.times.extend(steps, times, aligned=len(self.times.values) == before, typed=True)
        for series in (*self.series.values(), self.times):
            series.settle()
        last = decode(loads(last_line))
        self.last_metrics = last if isinstance(last, Metrics) else None
        self.metrics_read += count
        update.steps += count

    def _fold_all(self, records: list[dict], update: StreamUpdate) -> None:
        """Runs of metrics lines with the same keys go in column by column; other lines are decoded."""
        run: list[dict] = []
        keys = None
        for record in records:
            if record.get("type") == "metrics":
                why = problem(record)  # as decode judges it: a step, a time and values that are numbers
                if why is not None or record.get("step", 0) >= MAX_STEP:  # rejected: no step
                    self._reject("metrics: " + (why or f"step {record['step']} is past {MAX_STEP - 1}"))
                    continue
                if run and record.keys() != keys:
                    self._fold_metrics(run, update)
                    run = []
                if not run:
                    keys = record.keys()
                run.append(record)
                continue
            if run:
                self._fold_metrics(run, update)
                run = []
            event = decode(record)
            if isinstance(event, UnknownEvent) and event.rejected:
                self._reject(f"{event.type_name}: {event.rejected}")
            self._fold(event, update)
        if run:
            self._fold_metrics(run, update)

    def _reject(self, why: str | None) -> None:
        self.rejected += 1
        if self.first_rejected is None and self._why is None:
            self._why = why or "fields of the wrong kind"

    def _fold_metrics(self, records: list[dict], update: StreamUpdate) -> None:
        """Metrics lines with the same keys, appended column by column (decoding each line costs more)."""
        first = records[0]
        steps = [r["step"] for r in records] if "step" in first else [0] * len(records)
        before = len(self.steps)
        self.steps.extend(steps)
        for key in first:
            if key in RESERVED or not charted(key):
                continue
            series = self.series.get(key)
            if series is None:
                series = self.series[key] = Series(shared=self.steps)
            series.extend(steps, [r[key] for r in records], aligned=len(series.values) == before)
        times = [r["time"] for r in records] if "time" in first else [None] * len(records)
        self.times.extend(steps, times, aligned=len(self.times.values) == before)
        for series in (*self.series.values(), self.times):
            series.settle()
        last = decode(dict(records[-1]))
        self.last_metrics = last if isinstance(last, Metrics) else None
        self.metrics_read += len(records)
        update.steps += len(records)
        if self._fast is not None:
            self._fast.learn(first)  # the fast path takes lines with these keys from now on

    def _size(self) -> int:
        try:
            return self.folder.events_file.stat().st_size
        except OSError:
            return 0

    def _fold(self, event: Event, update: StreamUpdate) -> None:
        if isinstance(event, Rewound):
            self._rewind(event)
            update.warnings = [w for w in update.warnings if w.step <= event.to_step]
        if isinstance(event, HealthWarning):
            self.warnings.append(event)
            update.warnings.append(event)
        elif not isinstance(event, UnknownEvent):  # run_started, checkpoint, eval, stop, run_finished, error, summary
            self.lifecycle.append(event)
            update.lifecycle.append(event)

    def _rewind(self, event: Rewound) -> None:
        """Cut every series back to the rewind's step; keep what was cut as its abandoned stretch."""
        to_step = event.to_step
        stretch: dict[str, Series] = {}
        for key, series in self.series.items():
            cut = _cut(series.steps, len(series), to_step)
            if cut < len(series):
                gone = stretch[key] = Series()
                gone.extend(list(series.steps[cut : len(series)]), series.values[cut:].tolist())
                _truncate(series, cut)
        _truncate(self.times, _cut(self.times.steps, len(self.times), to_step))
        del self.steps[_cut(self.steps, len(self.steps), to_step) :]
        self.rewinds.append(event)
        self.abandoned.append(stretch)
        live = [w for w in self.warnings if w.step <= to_step]
        self.abandoned_warnings += [w for w in self.warnings if w.step > to_step]
        self.warnings = live
        if self.last_metrics is not None and self.last_metrics.step > to_step:
            self.last_metrics = None  # until the new leg's first step

    def rate(self, window: int = 20) -> float | None:
        """Steps per second over the last ``window`` logged steps, not across a pause between legs (legs.py)."""
        n = len(self.times)  # the steps may be shared, and longer
        first = max(0, n - window)
        return per_second(self.times.steps[first:n], self.times.values[first:n], self._leg_starts(), window)

    def tokens_rate(self, window: int = 20) -> float | None:
        tokens = self.series.get("num_tokens")
        if tokens is None:
            return None
        return per_second(tokens.values, self.times.values, self._leg_starts(), window)

    def _leg_starts(self) -> list[float]:
        return [e.time for e in self.lifecycle if isinstance(e, RunStarted) and e.time is not None]

    # -- frozen views for another thread ---------------------------------------------------------------

    def view(self, new: StreamUpdate | None = None) -> StreamView:
        """Where the stream stands, with ``new``'s warnings and lifecycle events (cheap: no series copied)."""
        return StreamView(
            self.metrics_read,
            self.last_metrics,
            tuple(self.series),
            self.rate(),
            self.tokens_rate(),
            tuple(new.warnings) if new else (),
            tuple(new.lifecycle) if new else (),
            self.skipped,
            self.skipped_where() if self.skipped else None,
        )

    def charts(self, request: ChartRequest) -> ChartData:
        """Each asked-for series that exists, downsampled to its chart's width (from the kept blocks)."""
        series = {}
        for key, buckets in request.widths:
            found = self.series.get(key)
            if found is not None and key not in series:
                series[key] = found.snapshot(key, max(int(buckets), 1), request.window)
        abandoned = {
            key: tuple(s[key].snapshot(key, max(int(buckets), 1)) for s in self.abandoned if key in s)
            for key, buckets in request.widths
        }
        return ChartData(
            request,
            MappingProxyType(series),
            MappingProxyType({key: found for key, found in abandoned.items() if found}),
            tuple(e.to_step for e in self.rewinds),
        )


def _cut(steps: Sequence[int], count: int, to_step: int) -> int:
    """The index of the first of the last points (of ``count``) past ``to_step``, walking back from the end."""
    cut = count
    while cut > 0 and steps[cut - 1] > to_step:
        cut -= 1
    return cut


def _truncate(series: Series, cut: int) -> None:
    """Drop the points of ``series`` from ``cut`` on; its kept blocks go with them (blocks past a cut changed)."""
    if cut >= len(series):
        return
    del series.values[cut:]
    if series.shared is None or series.steps is not series.shared:
        del series.steps[cut:]
    series.blocks = BlockCache()
