"""One run's row, wherever the run is: what ``grpo-tui runs`` shows, ``runs --json`` sends, and a host's reply becomes.

The catalog makes one from a run folder here (``catalog.run_info``); ``to_wire`` is its ``runs --json`` row; a
host's row is checked into the same type where it arrives (``RunInfo.from_wire``), so a run here and one on a host
are listed, compared and shown alike. Each field is declared once, with its JSON key, its check and its
conversions (``fields.wire``): the class is the row's encoder and its decoder, and the keys are written in one
place. A summary's held-out figures are read by the same table (``EvalFigures.from_record``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_tui.services.records.fields import (
    APPENDED,
    HOST_PATH,
    MAX_TEXT,
    NUMBER_OR_NULL,
    RUN_ID_VALUE,
    SECONDS,
    STATUS,
    TEXT,
    TEXT_OR_NULL,
    WHOLE,
    WHOLE_OR_NULL,
    Fields,
    Record,
    WireError,
    array_schema,
    checked,
    fail,
    items,
    maybe,
    parse_status,
    schema_ref,
    wire,
)
from trainer_core.contract.run.events import Eval, HealthWarning
from trainer_core.contract.run.json_values import text, text_or_none
from trainer_core.contract.run.line_check import SkippedLines
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import eval_figures, warning_record


@dataclass(frozen=True)
class EvalPoint(Record):
    """One eval's value of the ranking metric, and its step."""

    schema_name = "point"

    step: int = wire(WHOLE)
    value: float | None = wire(NUMBER_OR_NULL)

    @classmethod
    def from_record(cls, record: object) -> EvalPoint | None:
        """``{step, value}`` as ``to_wire`` wrote it; None when it is not one."""
        try:
            return cls.from_wire(record)
        except WireError:
            return None


MAX_TAGS = 64  # a row's tags (a config allows 20: a host may be newer)
TAG_TEXT = text(200)

EVAL_POINTS = ("baseline", "latest", "best")  # an ``eval`` record's points, after its ``metric``


def _metric(value: str, where: str) -> str:
    if not value:
        fail(where, value, "a metric's name (a non-empty string)")
    return value


def _point(value: Any, where: str) -> EvalPoint | None:
    return None if value is None else EvalPoint.from_wire(value, where)


_POINT = {"load": _point, "dump": maybe(EvalPoint.to_wire), "schema": schema_ref(EvalPoint, nullable=True)}


@dataclass(frozen=True)
class EvalFigures(Record):
    """A run's held-out evaluation in three figures of its ranking ``metric`` (``ledger.default_metric``): the
    baseline (the base model's eval, step 0), the latest eval and the best one (the highest; the later on a tie,
    as the ledger ranks checkpoints). Computed by ``summary.eval_figures``, which a finished run's summary
    stores: a run is listed alike from its summary and from its events. A row's ``eval``: null without evals,
    else its metric's name and each point ``{step, value}`` or null."""

    schema_name = "cli.eval_figures"

    metric: str = wire(TEXT, load=_metric)
    baseline: EvalPoint | None = wire(**_POINT)
    latest: EvalPoint | None = wire(**_POINT)
    best: EvalPoint | None = wire(**_POINT)

    @classmethod
    def of(cls, evals: Mapping[int, Eval], metric: str | None) -> EvalFigures | None:
        """The figures of ``evals`` (by step); None without evals or a metric."""
        return cls.from_record(eval_figures(evals, metric))

    @classmethod
    def from_record(cls, record: object) -> EvalFigures | None:
        """The figures ``summary.eval_figures`` made (as a summary stores them); None when ``record`` is not
        that: None itself, or a record of the wrong shape (then its points are not trusted either)."""
        try:
            return None if record is None else cls.from_wire(record)
        except WireError:
            return None


def parse_alert(data: Any, where: str = "alert") -> HealthWarning:
    """A warning record (``warning_record``: a health rule that fired, as the host judged it)."""
    f = Fields(data, where)
    severity = f.get("severity", Severity.WARN.value)
    parsed = Severity.parse(severity) if isinstance(severity, str) else None
    if parsed is None:
        fail(f.name("severity"), severity, "a severity (" + ", ".join(s.value for s in Severity) + ")")
    evidence = f.get("evidence", {})
    if not isinstance(evidence, dict):
        fail(f.name("evidence"), evidence, "a JSON object")
    return HealthWarning(
        f.check("rule", TEXT, ""),
        parsed,
        f.check("step", WHOLE, 0),
        f.check("message", TEXT, ""),
        f.check("advice", TEXT, ""),
        evidence,
    )


def parse_alerts(value: Any, where: str) -> tuple[HealthWarning, ...]:
    """A list of warning records (null: none)."""
    return tuple(parse_alert(a, f"{where}[{i}]") for i, a in enumerate(items(value, where)))


def _skipped(value: Any, where: str) -> dict[str, SkippedLines] | None:
    """A row's ``skipped_lines``: ``SkippedLines.to_record`` by file name (names other than the run's JSONL files are
    left out); null when the host did not check (a grpo-tui before it did)."""
    if value is None:
        return None
    f = Fields(value, where)
    found = {}
    for name in APPENDED:
        if f.get(name) is not None:
            one = Fields(f.get(name), f.name(name))
            count = one.whole("count")
            if not count:
                fail(one.name("count"), count, "a whole number from 1")
            found[name] = SkippedLines(count, one.text("first", optional=False), one.whole("checked_from", default=0))
    return found


def _tags(value: Any, where: str) -> tuple[str, ...]:
    """A row's ``tags``: a list of short strings (null or absent: none, as an older host sends)."""
    found = items(value, where, MAX_TAGS)
    for i, tag in enumerate(found):
        checked(tag, TAG_TEXT, f"{where}[{i}]")
    return tuple(found)


def labels_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The name, tags and notes that a config.yaml or a summary holds (it may hold anything: what is not text, or
    not a list of text, is left out)."""
    tags = config.get("tags")
    tags = tuple(t for t in tags if TAG_TEXT.accepts(t))[:MAX_TAGS] if isinstance(tags, list) else ()
    return {
        "name": text_or_none(config.get("name"), MAX_TEXT) or None,
        "tags": tags,
        "notes": text_or_none(config.get("notes"), MAX_TEXT) or None,
    }


@dataclass
class RunInfo(Record):
    """One run as ``grpo-tui runs`` shows it; times are unix seconds, ``duration`` is seconds; ``path`` is the
    folder's path where the run is (a path on its host for a remote run)."""

    schema_name = "cli.run_row"

    run_id: str = wire(RUN_ID_VALUE)
    path: Path = wire(HOST_PATH, load=lambda v, _: Path(v), dump=str)
    project: str | None = wire(TEXT_OR_NULL)
    model: str | None = wire(TEXT_OR_NULL)
    status: Status = wire(load=parse_status, dump=lambda s: s.value, schema=STATUS)
    step: int | None = wire(WHOLE_OR_NULL)
    total: int | None = wire(WHOLE_OR_NULL)
    last_reward: float | None = wire(NUMBER_OR_NULL)
    started: float | None = wire(SECONDS)
    ended: float | None = wire(SECONDS)
    duration: float | None = wire(SECONDS)
    warnings: int = wire(WHOLE, missing=0)
    last_warning: str | None = wire(TEXT_OR_NULL)
    exit_reason: str | None = wire(TEXT_OR_NULL)
    # watcher-side warnings: stall, crash cause
    alerts: list[HealthWarning] = wire(
        load=lambda v, where: list(parse_alerts(v, where)),
        dump=lambda a: list(map(warning_record, a)),
        schema=array_schema({"$ref": "#/$defs/cli.alert"}),
        factory=list,
    )
    # the host it runs on (executors/hosts.py); None: this machine. Sent, never read: the caller says it
    host: str | None = wire(sent=True, schema=TEXT_OR_NULL.json_schema(), default=None)
    queue_reason: str | None = wire(TEXT_OR_NULL, default=None)  # a queued Slurm job: why it waits (Priority, ...)
    # the held-out evaluation's figures; None: the run has no held-out set
    held_out: EvalFigures | None = wire(
        key="eval",
        load=lambda v, where: None if v is None else EvalFigures.from_wire(v, where),
        dump=maybe(EvalFigures.to_wire),
        schema=schema_ref(EvalFigures, nullable=True),
        default=None,
    )
    # what a person calls the run (config's name, tags, notes: run_labels.py); absent from an older host's row
    name: str | None = wire(TEXT_OR_NULL, default=None)
    tags: tuple[str, ...] = wire(
        load=_tags, dump=list, schema=array_schema(TAG_TEXT.json_schema(), MAX_TAGS), default=()
    )
    notes: str | None = wire(TEXT_OR_NULL, default=None)
    # lines at the end of its files that readers skip (run/line_check.py), by file name: empty when none; None when
    # not checked (a host whose grpo-tui does not say)
    skipped: dict[str, SkippedLines] | None = wire(
        key="skipped_lines",
        load=_skipped,
        dump=maybe(lambda s: {k: v.to_record() for k, v in s.items()}),
        schema={"type": ["object", "null"]},
        default=None,
    )
    # how many times the run went back to an older checkpoint (run/rewinds.py); 0 in an older host's row
    rewinds: int = wire(WHOLE, missing=0, default=0)

    @property
    def key(self) -> str:
        """Unique across hosts: the run id, prefixed by the host for a remote run."""
        return self.run_id if self.host is None else f"{self.host}:{self.run_id}"
