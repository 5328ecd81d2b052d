"""The event schema: one typed definition per event type of ``events.jsonl`` (docs/run-format.md).

Every writer builds these and every reader gets them back from ``decode``, so a field's name is written in
one place. On disk an event is one flat JSON object: ``type``, ``time``, the event's fields; a metrics or
summary event spreads its values beside ``step`` (TRL's keys verbatim). Decoding is lenient, as a public
format's reader must be: a missing (or null) field takes its default, an unknown key of a typed event is kept
in ``extra``, and a type this version does not know decodes as ``UnknownEvent`` instead of failing. What it
does not take is a field of the wrong kind: each field carries its rule (``checked``, event_rules.py), and a
line that breaks one is an ``UnknownEvent`` that says why, which every reader skips and counts.
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, ClassVar

from trainer_core.contract.run.event_rules import CHANGES, COUNT, NAMES, RULE, STATS, STEP, TEXT, checked, judge
from trainer_core.contract.run.json_values import FLAG, LIST, NUMBER, OBJECT, is_number, whole
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.value_enum import ValueEnum


class EventType(ValueEnum):
    RUN_STARTED = "run_started"
    METRICS = "metrics"
    CHECKPOINT = "checkpoint"
    STOP_REQUESTED = "stop_requested"
    RUN_FINISHED = "run_finished"
    ERROR = "error"
    WARNING = "warning"
    SUMMARY = "summary"
    NOTIFY_FAILED = "notify_failed"
    EVAL = "eval"
    REWOUND = "rewound"


class ErrorKind(ValueEnum):
    """What failed, in an ``error`` event's ``kind`` (docs/run-format.md); the watcher's crash rules read it."""

    ENVIRONMENT = "environment"  # the user's environment or reward code raised; ``case`` holds the row
    EXCEPTION = "exception"  # any other exception in the trainer or the run's root process
    TRAINER_EXIT = "trainer_exit"  # the root process recorded a trainer that died without writing its end
    VLLM_SERVER = "vllm_server"  # the run's own vLLM server did not start or become healthy
    # a disk fault (run/disk.py maps each errno to one): freeing space fixes the first two
    DISK_FULL = "disk_full"
    QUOTA_EXCEEDED = "quota_exceeded"
    READ_ONLY_FILESYSTEM = "read_only_filesystem"
    IO_ERROR = "io_error"


class RewindBy(ValueEnum):
    """Who asked for a rewind, in a ``rewound`` event's ``by`` (one this version does not know stays a string)."""

    USER = "user"  # grpo-tui train|launch --resume, or grpo-tui rollback
    RULE = "rule"  # a health rule's remedy, acted on by the run's root
    MCP = "mcp"  # a client of grpo-tui mcp
    VIEWER = "viewer"  # the app's Roll back action


USER_MISTAKE = "user_mistake"  # an error event's flag: found before training, the user's to fix (exit 2)


def now() -> float:
    return round(_time.time(), 3)


@dataclass(frozen=True)
class Event:
    type: ClassVar[EventType | str]
    time: float | None = field(default=None, kw_only=True)
    extra: dict = field(default_factory=dict, kw_only=True, compare=False)

    def to_record(self) -> dict:
        """The flat JSON object written to events.jsonl."""
        record: dict[str, Any] = {"type": str(self.type), "time": now() if self.time is None else self.time}
        for f in fields(self):
            if f.name not in ("time", "extra"):
                value = getattr(self, f.name)
                record[f.name] = value.value if isinstance(value, Enum) else value
        record.update(self.extra)
        return record


@dataclass(frozen=True)
class RunStarted(Event):
    type: ClassVar = EventType.RUN_STARTED
    run_id: str = checked(TEXT, "")
    pid: int | None = checked(COUNT)
    host: str | None = checked(TEXT)
    world_size: int = checked(COUNT, 1)
    project_name: str | None = checked(TEXT)
    model: str | None = checked(TEXT)
    max_steps: int | None = checked(whole(-1, words="a whole number, -1 (by epochs) or more"))
    resumed_from: str | None = checked(TEXT)
    restart: int | None = checked(COUNT)
    skipped_checkpoints: list | None = checked(LIST)
    revision: int | None = checked(COUNT)
    changes: dict | None = checked(CHANGES)
    by: str | None = checked(TEXT)
    reason: str | None = checked(TEXT)

    def to_record(self) -> dict:
        """A first start has no resume fields; a resume has ``resumed_from`` and ``restart`` (1 for the first
        resume), and ``skipped_checkpoints`` (``{"name", "problems", "moved_to"}``) when newer ones were torn; a
        leg that runs with changed settings has the config ``revision`` and the ``changes`` it made
        (``{SETTING: {"from": OLD, "to": NEW}}``); a resume that says who asked for it has ``by`` (user, rule, mcp,
        viewer) and its ``reason``."""
        record = super().to_record()
        for optional in ("resumed_from", "restart", "skipped_checkpoints", "revision", "changes", "by", "reason"):
            if record[optional] is None:
                del record[optional]
        return record


@dataclass(frozen=True)
class _Values(Event):
    """An event that carries a step and a mapping of logged values (each a ``VALUE``), spread flat on disk."""

    step: int = checked(STEP, 0)
    values: dict = field(default_factory=dict)

    def to_record(self) -> dict:
        return {
            "type": str(self.type),
            "time": now() if self.time is None else self.time,
            "step": self.step,
            **self.values,
        }

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


@dataclass(frozen=True)
class Metrics(_Values):
    """One logged step: TRL's ``on_log`` keys verbatim (``reward``, ``reward_std``, ``kl``, ``loss``, ...)."""

    type: ClassVar = EventType.METRICS


@dataclass(frozen=True)
class Summary(_Values):
    """TRL's end-of-training log (``train_runtime``, ``train_loss``, ...)."""

    type: ClassVar = EventType.SUMMARY


@dataclass(frozen=True)
class Checkpoint(Event):
    type: ClassVar = EventType.CHECKPOINT
    step: int = checked(STEP, 0)
    path: str = checked(TEXT, "")
    final: bool = checked(FLAG, False)

    def to_record(self) -> dict:
        record = super().to_record()
        if not self.final:
            del record["final"]
        return record


@dataclass(frozen=True)
class StopRequested(Event):
    type: ClassVar = EventType.STOP_REQUESTED
    reason: str | None = checked(TEXT)
    step: int = checked(STEP, 0)


@dataclass(frozen=True)
class RunFinished(Event):
    type: ClassVar = EventType.RUN_FINISHED
    status: Status = checked(TEXT, Status.FAILED)
    reason: str | None = checked(TEXT)
    step: int = checked(STEP, 0)


@dataclass(frozen=True)
class Error(Event):
    """``kind``: an ``ErrorKind`` (a kind this version does not know stays a plain string)."""

    type: ClassVar = EventType.ERROR
    kind: ErrorKind | str = checked(TEXT, ErrorKind.EXCEPTION)
    message: str = checked(TEXT, "")
    traceback: str | None = checked(TEXT)
    case: dict | None = checked(OBJECT)
    step: int = checked(STEP, 0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ErrorKind.parse(self.kind, self.kind))

    def to_record(self) -> dict:
        record = super().to_record()
        for optional in ("traceback", "case"):
            if record[optional] is None:
                del record[optional]
        return record


@dataclass(frozen=True)
class HealthWarning(Event):
    """A health rule that fired (a ``warning`` event): what is wrong, the evidence, and what to change.

    Build one with ``health.warning``, which gives it its rule's advice. ``rule`` is a ``HealthRule``; a rule
    this version does not know (a newer trainer's, read from a file) stays a plain string."""

    type: ClassVar = EventType.WARNING
    rule: HealthRule | str = checked(TEXT, "")
    severity: Severity = checked(TEXT, Severity.WARN)
    step: int = checked(STEP, 0)
    message: str = checked(TEXT, "")
    advice: str = checked(TEXT, "")
    evidence: dict = checked(OBJECT, factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rule", HealthRule.parse(self.rule, self.rule))
        if not isinstance(self.severity, Severity):
            object.__setattr__(self, "severity", Severity.parse(self.severity, Severity.WARN))


def warning(
    rule: HealthRule, severity: Severity, step: int, message: str, evidence: dict | None = None
) -> HealthWarning:
    """The ``warning`` event of ``rule``: every rule's warning is built here, so it carries the rule's one advice."""
    return HealthWarning(rule, severity, step, message, rule.advice, evidence or {})


@dataclass(frozen=True)
class NotifyFailed(Event):
    """An alert that could not be delivered (trainer_core/alerting/notify.py): written once per notify URL per run, by
    the run's root process, after its retries failed. ``url`` is masked (the URL is a secret); ``alert`` is
    what it tried to send (``warning``, ``auto_stop``, ``run_end``, or None when nothing could be sent at all:
    a refused settings file, whose path is then ``url``)."""

    type: ClassVar = EventType.NOTIFY_FAILED
    url: str = checked(TEXT, "")
    reason: str = checked(TEXT, "")
    alert: str | None = checked(TEXT)
    attempts: int = checked(COUNT, 0)
    step: int = checked(STEP, 0)


@dataclass(frozen=True)
class Eval(Event):
    """One held-out evaluation (docs/evaluation.md): the model of ``step`` (the base model at step 0, ``base``)
    scored on ``prompts`` held-out prompts with ``generations`` samples each. ``metrics`` maps each metric's
    name to its statistics: ``mean`` over every sample, ``pass@K`` (the share of prompts whose best sample
    scores, as the mean of each prompt's best value) and ``std`` across prompts; a reward function is measured
    as a metric too (``reward`` is the weighted total). ``train_reward``: the training reward over the last
    logged steps when the eval ran (None before any), what the divergence rule reads the metrics against.
    ``engine``: what generated the samples, ``vllm`` or ``transformers`` (None: an eval written before it was
    recorded, by transformers)."""

    type: ClassVar = EventType.EVAL
    step: int = checked(STEP, 0)
    metrics: dict = checked(STATS, factory=dict)
    task_metrics: list = checked(NAMES, factory=list)
    prompts: int = checked(COUNT, 0)
    generations: int = checked(COUNT, 1)
    seconds: float = checked(NUMBER, 0.0)
    base: bool = checked(FLAG, False)
    train_reward: float | None = checked(NUMBER)
    engine: str | None = checked(TEXT)

    def value(self, metric: str) -> float | None:
        """``NAME`` (its mean) or ``NAME/STAT`` (``answer/pass@4``): a finite number, else None."""
        name, stat = metric, "mean"
        if metric not in self.metrics and "/" in metric:
            name, _, stat = metric.rpartition("/")
        stats = self.metrics.get(name)
        value = stats.get(stat) if isinstance(stats, dict) else None
        return float(value) if is_number(value) else None

    def headline(self) -> dict[str, float]:
        """Each metric's mean, the figure a list or a chart shows (the task metrics first)."""
        names = [*self.task_metrics, *(n for n in self.metrics if n not in self.task_metrics)]
        found = {name: self.value(name) for name in names if name in self.metrics}
        return {name: value for name, value in found.items() if value is not None}


EVAL_ENGINES = ("vllm", "transformers")
"""What may generate an eval's samples (``Eval.engine``)."""


@dataclass(frozen=True)
class Rewound(Event):
    """A leg that starts from a checkpoint older than the run's last logged step (rewinds.py, docs/run-format.md):
    written once, before that leg's ``run_started``. ``from_step``: the last step the run had reached;
    ``to_step``: the checkpoint's step (0: the base model, ``checkpoint`` ``base``); ``by``: a ``RewindBy``;
    ``rule``: the health rule whose remedy it was, if any; ``changes``: ``{SETTING: {"from": OLD, "to": NEW}}``;
    ``revision``: the config revision the new leg runs with (0: never changed). Every line of the earlier legs
    with a step past ``to_step`` is abandoned from here on. ``to_step`` is required: a line without it is no rewind."""

    type: ClassVar = EventType.REWOUND
    from_step: int = checked(STEP, 0)
    to_step: int = checked(STEP, -1)
    checkpoint: str = checked(TEXT, "")
    reason: str | None = checked(TEXT)
    by: RewindBy | str = checked(TEXT, RewindBy.USER)
    rule: str | None = checked(TEXT)
    changes: dict = checked(CHANGES, factory=dict)
    revision: int = checked(COUNT, 0)

    def __post_init__(self) -> None:
        if self.to_step < 0:
            raise ValueError("to_step is required: the step of the checkpoint the run went back to (0: the base model)")
        object.__setattr__(self, "by", RewindBy.parse(self.by, self.by))


@dataclass(frozen=True)
class UnknownEvent(Event):
    """An event of a type this version does not know, or a known one whose fields have the wrong kind
    (``rejected`` says which and why); ``extra`` holds its fields. Readers pass it by: it is kept, not shown."""

    type_name: str = ""
    rejected: str | None = None

    @property
    def type(self) -> str:  # type: ignore[override]
        return self.type_name

    def to_record(self) -> dict:
        return {"type": self.type_name, "time": self.time, **self.extra}


TYPED: dict[str, type[Event]] = {
    str(cls.type): cls
    for cls in (
        RunStarted,
        Metrics,
        Summary,
        Checkpoint,
        StopRequested,
        RunFinished,
        Error,
        HealthWarning,
        NotifyFailed,
        Eval,
        Rewound,
    )
}
_FIELDS = {name: {f.name for f in fields(cls)} - {"extra"} for name, cls in TYPED.items()}
_RULES = {
    name: tuple((f.name, f.metadata[RULE]) for f in fields(cls) if RULE in f.metadata) for name, cls in TYPED.items()
}
_ENUMS = {"status": Status, "severity": Severity}


def problem(record: dict) -> str | None:
    """Why a line's JSON object is no event (``step must be a whole number, 0 or more; got 'x'``), or None
    (``event_rules.judge`` by each type's rules)."""
    return judge(record, _RULES)


def decode(record: dict) -> Event:
    """The typed event a parsed JSON line holds. ``record`` may be consumed (metrics reuse it as values). A
    line ``problem`` refuses (``"step": "x"``, ``"reward": "NaN"``, ``"time": "soon"``) is an ``UnknownEvent``
    that says why, so no reader meets a step, a time or a value that is not a number."""
    why = problem(record)
    kind = record.pop("type", None)
    stamp = record.get("time")
    if is_number(stamp) or stamp is None:
        record.pop("time", None)
    else:
        stamp = None  # kept in extra, as it was
    if why is not None:
        return UnknownEvent(time=stamp, type_name=str(kind), extra=record, rejected=why)
    if kind == "metrics" or kind == "summary":
        step = record.pop("step", 0)
        return (Metrics if kind == "metrics" else Summary)(time=stamp, step=step, values=record)
    cls = TYPED.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return UnknownEvent(time=stamp, type_name=str(kind), extra=record)
    known = _FIELDS[kind]
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in record.items():
        if key not in known:
            extra[key] = value
        elif value is not None:  # null: the field's default (an older writer's "no step yet")
            enum = _ENUMS.get(key)
            kwargs[key] = value if enum is None else enum.parse(value) or value
    try:
        return cls(time=stamp, extra=extra, **kwargs)
    except (TypeError, ValueError) as exc:  # a field of the wrong kind: keep the line, untyped, rather than fail
        return UnknownEvent(time=stamp, type_name=kind, extra={**kwargs, **extra}, rejected=str(exc)[:200])


def clean(value: Any) -> Any:
    """Make a value strict-JSON safe: NaN/inf become None, tensors and numpy scalars become numbers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return clean(item())
        except (TypeError, ValueError, RuntimeError):
            pass
    return str(value)


def format_metrics_line(step: int, total: int | None, logs: dict) -> str:
    def num(key, fmt="{:.4f}"):
        value = logs.get(key)
        return "-" if value is None else fmt.format(value)

    parts = [f"step {step}/{total}" if total else f"step {step}"]
    parts.append(f"reward {num('reward')} ±{num('reward_std')}")
    if "kl" in logs:
        parts.append(f"kl {num('kl')}")
    parts.append(f"loss {num('loss')}")
    if "entropy" in logs:
        parts.append(f"entropy {num('entropy', '{:.3f}')}")
    if "completions/mean_length" in logs:
        parts.append(f"len {num('completions/mean_length', '{:.1f}')}")
    return "  ".join(parts)
