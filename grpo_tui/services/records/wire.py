"""What a remote host sends back, checked where it arrives: the one definition of the remote wire.

A host is driven through its own grpo-tui (``grpo_tui/executors/ssh.py``): the replies of its ``info``,
``runs``, ``launch`` and ``stop --json`` and the lines of its ``events --mirror`` stream (written by
``grpo_tui/services/serving/event_feed.py``, applied by ``grpo_tui/executors/mirror.py``) are all this machine takes
from it, and a broken or compromised host may send anything. A run id becomes a local folder name, an offset
a seek in a local file, a number a chart's value; so each message kind is a frozen dataclass with a
``parse_…`` function that returns one or raises ``WireError`` naming the field, the value and what was
expected. Code past the parsers trusts the types. The sender builds its mirror messages, its event lines,
its ``runs --json`` rows and its ``stop --json`` reply from the same classes (``encode``, ``to_wire``,
``to_dict``), so the two sides cannot drift apart; the JSON itself is documented in docs/hosts.md. A row is a
``RunInfo`` (``services/records/run_row.py``) and a stop a ``StopOutcome`` (``services/records/stop_outcome.py``), the types
the catalog and the supervisor make here; ``LaunchReply`` is also what an executor returns for a run of this
machine (``grpo_tui/executors/base.py``): one record, wherever the run is.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from dataclasses import asdict, dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any, NoReturn

from orjson import dumps, loads

from grpo_tui.services.records.run_row import EVAL_POINTS, EvalFigures, EvalPoint, RunInfo
from grpo_tui.services.records.stop_outcome import StopOutcome
from trainer_core.contract.run.events import HealthWarning
from trainer_core.contract.run.line_check import SkippedLines
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.state import StateError, parse_object
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import warning_record

RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}\Z")
RUN_ID_RULE = "a run id (letters, digits, '.', '_', '-'; not starting with '.' or '-'; at most 128 characters)"
APPENDED = ("events.jsonl", "samples.jsonl", "trainer.log")  # copied byte for byte at the host's offsets
WHOLE = ("config.yaml", "state.json")  # copied whole whenever they change
MAX_OFFSET = 1 << 40  # 1 TiB: past any run file's size; an offset beyond it is a lie, not a long run
MAX_DATA = 16 << 20  # decoded bytes in one message (the sender's chunks are 1 MiB, whole files are small)
MAX_LINE = MAX_DATA * 4 // 3 + 4096  # one stream line: the base64 of MAX_DATA and the JSON around it
MAX_TEXT = 64 * 1024  # characters in one text field
MAX_ITEMS = 4096  # GPUs, alerts or problems in one message
_STATUSES = ", ".join(s.value for s in Status)


class WireError(ValueError):
    """What a host sent is not what the format says; the message names the field, the value and the rule."""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _fail(where: str, value: Any, expected: str) -> NoReturn:
    raise WireError(
        f"{where}: expected {expected}, got {_show(value)}" if where else f"expected {expected}, got {_show(value)}"
    )


class _Fields:
    """Typed reads of one JSON object's fields; ``where`` prefixes the field names in errors."""

    def __init__(self, data: Any, where: str = ""):
        if not isinstance(data, dict):
            _fail(where, data, "a JSON object")
        self.data, self.where = data, where

    def name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def whole(self, key: str, *, optional: bool = False, default: Any = None, maximum: int = MAX_OFFSET) -> Any:
        value = self.data.get(key, default)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
            _fail(self.name(key), value, f"a whole number from 0 to {maximum}" + (" or null" if optional else ""))
        return value

    def number(self, key: str, *, minimum: float | None = None) -> float | None:
        """An optional finite number (an int stays an int)."""
        value = self.data.get(key)
        if value is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or (minimum is not None and value < minimum)
        ):
            _fail(
                self.name(key),
                value,
                "a finite number" + (f" >= {minimum:g}" if minimum is not None else "") + " or null",
            )
        return value

    def text(self, key: str, *, optional: bool = True, default: Any = None) -> Any:
        value = self.data.get(key, default)
        if value is None and optional:
            return None
        if not isinstance(value, str) or len(value) > MAX_TEXT:
            _fail(
                self.name(key), value, f"a string of at most {MAX_TEXT} characters" + (" or null" if optional else "")
            )
        return value

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            _fail(self.name(key), value, "true or false")
        return value

    def items(self, key: str) -> list:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or len(value) > MAX_ITEMS:
            _fail(self.name(key), value, f"a list of at most {MAX_ITEMS} items")
        return value


def parse_run_id(value: Any, where: str = "run_id") -> str:
    """``value`` if it is a run id: one path component that cannot climb out of a folder or look like a flag."""
    if not isinstance(value, str) or not RUN_ID.match(value):
        _fail(where, value, RUN_ID_RULE)
    return value


def _host_path(f: _Fields, key: str) -> str:
    value = f.get(key)
    if not isinstance(value, str) or not value or len(value) > 4096 or "\0" in value or value.startswith("-"):
        _fail(f.name(key), value, "a path on the host (a non-empty string, not starting with '-')")
    return value


def _status(value: Any, where: str) -> Status:
    status = Status.parse(value) if isinstance(value, str) else None
    if status is None:
        _fail(where, value, f"a status ({_STATUSES})")
    return status


def parse_alert(data: Any, where: str = "alert") -> HealthWarning:
    """A warning record (``warning_record``: a health rule that fired, as the host judged it)."""
    f = _Fields(data, where)
    severity = f.get("severity", Severity.WARN.value)
    parsed = Severity.parse(severity) if isinstance(severity, str) else None
    if parsed is None:
        _fail(f.name("severity"), severity, "a severity (" + ", ".join(s.value for s in Severity) + ")")
    evidence = f.get("evidence", {})
    if not isinstance(evidence, dict):
        _fail(f.name("evidence"), evidence, "a JSON object")
    return HealthWarning(
        f.text("rule", optional=False, default=""),
        parsed,
        f.whole("step", default=0),
        f.text("message", optional=False, default=""),
        f.text("advice", optional=False, default=""),
        evidence,
    )


def _alerts(f: _Fields, key: str = "alerts") -> tuple[HealthWarning, ...]:
    return tuple(parse_alert(a, f"{f.name(key)}[{i}]") for i, a in enumerate(f.items(key)))


# -- replies to commands --------------------------------------------------------------------------------


def parse_run_row(data: Any) -> RunInfo:
    """One row of ``runs --json`` (``RunInfo.to_dict`` on the host) as the ``RunInfo`` it was; ``path`` is a path
    there, ``host`` is left for the caller to say (the host's own ``host`` is None: its machine)."""
    f = _Fields(data)
    return RunInfo(
        run_id=parse_run_id(f.get("run_id")),
        path=Path(_host_path(f, "path")),
        project=f.text("project"),
        model=f.text("model"),
        status=_status(f.get("status"), "status"),
        step=f.whole("step", optional=True),
        total=f.whole("total", optional=True),
        last_reward=f.number("last_reward"),
        started=f.number("started", minimum=0),
        ended=f.number("ended", minimum=0),
        duration=f.number("duration", minimum=0),
        warnings=f.whole("warnings", default=0),
        last_warning=f.text("last_warning"),
        exit_reason=f.text("exit_reason"),
        alerts=list(_alerts(f)),
        queue_reason=f.text("queue_reason"),
        held_out=_held_out(f),
        skipped=_skipped(f),
    )


def _held_out(row: _Fields, key: str = "eval") -> EvalFigures | None:
    """A row's ``eval`` (``EvalFigures.to_dict``): null for a run without evals, else its ranking metric's name and
    each point ``{step, value}`` or null."""
    if row.get(key) is None:
        return None
    f = _Fields(row.get(key), row.name(key))
    metric = f.text("metric", optional=False)
    if not metric:
        _fail(f.name("metric"), metric, "a metric's name (a non-empty string)")
    points = {}
    for name in EVAL_POINTS:
        point = None if f.get(name) is None else _Fields(f.get(name), f.name(name))
        points[name] = point and EvalPoint(point.whole("step"), point.number("value"))
    return EvalFigures(metric, **points)


def _skipped(row: _Fields, key: str = "skipped_lines") -> dict[str, SkippedLines] | None:
    """A row's ``skipped_lines``: ``SkippedLines.to_record`` by file name (names other than the run's JSONL files are
    left out); null when the host did not check (a grpo-tui before it did)."""
    if row.get(key) is None:
        return None
    f = _Fields(row.get(key), row.name(key))
    found = {}
    for name in APPENDED:
        if f.get(name) is not None:
            one = _Fields(f.get(name), f.name(name))
            count = one.whole("count")
            if not count:
                _fail(one.name("count"), count, "a whole number from 1")
            found[name] = SkippedLines(count, one.text("first", optional=False), one.whole("checked_from", default=0))
    return found


def parse_run_rows(data: Any) -> tuple[list[RunInfo], list[str]]:
    """The valid rows of a ``runs --json`` reply, and one problem per row that is not (``row N: …``).

    Raises WireError when the reply is not a list at all."""
    if not isinstance(data, list):
        _fail("", data, "a JSON list of runs")
    rows, problems, seen = [], [], set()
    for n, item in enumerate(data, 1):
        try:
            row = parse_run_row(item)
        except WireError as exc:
            problems.append(f"row {n}: {exc}")
            continue
        if row.run_id in seen:
            problems.append(f"row {n}: run_id: {row.run_id!r} is listed twice")
            continue
        seen.add(row.run_id)
        rows.append(row)
    return rows, problems


@dataclass(frozen=True)
class GpuRecord:
    """A GPU as the host lists it (``asdict`` of its ``GPU``)."""

    index: int
    name: str
    memory_total: int
    memory_used: int
    utilization: int

    def to_wire(self) -> dict:
        return asdict(self)


def parse_gpu(data: Any, where: str = "gpu") -> GpuRecord:
    f = _Fields(data, where)
    return GpuRecord(
        f.whole("index", maximum=MAX_ITEMS),
        f.text("name", optional=False),
        f.whole("memory_total"),
        f.whole("memory_used"),
        f.whole("utilization", maximum=100),
    )


def _gpus(f: _Fields) -> tuple[GpuRecord, ...]:
    return tuple(parse_gpu(g, f"{f.name('gpus')}[{i}]") for i, g in enumerate(f.items("gpus")))


INSTALL_KINDS = ("light", "train")
TRAINER_MODULES = ("torch", "transformers", "trl", "datasets", "peft", "accelerate")
"""What the ``[train]`` extra adds, by import name: a run's processes import them; the app and the CLI never do."""


def missing_trainer() -> list[str]:
    """The trainer's packages this interpreter cannot import: looked up with ``find_spec``, never imported."""
    missing = []
    for module in TRAINER_MODULES:
        try:
            found = find_spec(module) is not None
        except (ImportError, ValueError):  # a broken install; a module whose __spec__ is gone
            found = False
        if not found:
            missing.append(module)
    return missing


TRAIN_EXTRA = "pip install 'grpo-tui[train]'"


def install_kind() -> str:
    """``train`` where this interpreter can run the trainer, else ``light`` (``pip install grpo-tui``: the app and
    the CLI, which watch, list, stop and export runs anywhere and launch on hosts that have the trainer)."""
    return "light" if missing_trainer() else "train"


@dataclass(frozen=True)
class HostInfo:
    """``info --json``: the host's grpo-tui version, the run format it writes, its runs folder and GPUs."""

    version: str | None
    run_format: int
    hostname: str | None
    runs_dir: str | None
    python: str | None
    gpus: tuple[GpuRecord, ...]
    install: str | None = field(default_factory=install_kind)
    """``train`` (``grpo-tui[train]``: it can run the trainer) or ``light`` (the app and the CLI only); None from
    a grpo-tui older than the key. Made here (``LocalExecutor.info``), it is this interpreter's."""

    def to_dict(self) -> dict:
        return {
            "version": self.version,
            "run_format": self.run_format,
            "hostname": self.hostname,
            "runs_dir": self.runs_dir,
            "python": self.python,
            "gpus": [g.to_wire() for g in self.gpus],
            "install": self.install,
        }


def parse_info(data: Any) -> HostInfo:
    f = _Fields(data)
    install = f.get("install")
    if install is not None and (not isinstance(install, str) or install not in INSTALL_KINDS):
        _fail("install", install, "'light', 'train' or null")
    return HostInfo(
        f.text("version"),
        f.whole("run_format", maximum=1 << 31),
        f.text("hostname"),
        f.text("runs_dir"),
        f.text("python"),
        _gpus(f),
        install,
    )


@dataclass(frozen=True)
class LaunchReply:
    """``launch --json`` (and ``launch --resume --json``): the run that was started there."""

    run_id: str
    path: str
    pid: int | None = None
    slurm_job_id: str | None = None


def parse_launch_reply(data: Any) -> LaunchReply:
    f = _Fields(data)
    return LaunchReply(
        parse_run_id(f.get("run_id")),
        _host_path(f, "path"),
        f.whole("pid", optional=True, maximum=1 << 31),
        f.text("slurm_job_id"),
    )


@dataclass(frozen=True)
class Problem:
    field: str | None
    message: str


@dataclass(frozen=True)
class LaunchCheck:
    """``launch --dry-run --json``: can the run start there, and if not, what is wrong with which field."""

    ok: bool
    problems: tuple[Problem, ...]
    placement: dict | None
    notes: tuple[str, ...] = ()
    """What a launch that goes ahead says: placement notes, hardware fallbacks (absent from older hosts)."""


def parse_launch_check(data: Any) -> LaunchCheck:
    f = _Fields(data)
    problems = []
    for i, item in enumerate(f.items("problems")):
        p = _Fields(item, f"problems[{i}]")
        problems.append(Problem(p.text("field"), p.text("message", optional=False)))
    ok = f.flag("ok")
    if not ok and not problems:
        _fail("problems", f.get("problems"), "at least one problem when ok is false")
    placement = f.get("placement")
    if placement is not None and not isinstance(placement, dict):
        _fail("placement", placement, "a JSON object or null")
    notes = f.items("notes")
    if not all(isinstance(n, str) for n in notes):
        _fail("notes", notes, "a list of strings")
    return LaunchCheck(ok, tuple(problems), placement, tuple(notes))


def _pids(f: _Fields, key: str) -> tuple[int, ...]:
    pids = []
    for i, pid in enumerate(f.items(key)):
        if isinstance(pid, bool) or not isinstance(pid, int) or not 0 <= pid < 1 << 31:
            _fail(f"{key}[{i}]", pid, "a process id (0: a Slurm job)")
        pids.append(pid)
    return tuple(pids)


def parse_stop_reply(data: Any) -> StopOutcome:
    """``stop --json`` (``StopOutcome.to_wire`` on the host) as the ``StopOutcome`` it was."""
    f = _Fields(data)
    left, forced = _pids(f, "left"), _pids(f, "forced")
    refused = []
    for i, why in enumerate(f.items("refused")):
        if not isinstance(why, str) or len(why) > MAX_TEXT:
            _fail(f"refused[{i}]", why, f"a string of at most {MAX_TEXT} characters")
        refused.append(why)
    status = f.get("status")
    return StopOutcome(
        f.text("run_id"),
        f.flag("was_running"),
        f.flag("graceful"),
        forced,
        left,
        None if status is None else _status(status, "status"),
        f.text("message", optional=False),
        tuple(refused),
    )


# -- the events stream (``grpo-tui events`` without --mirror) ---------------------------------------------


@dataclass(frozen=True)
class EventLine:
    """``{"offset": O, "end": E, "event": {...}}``: one event and where it lies in events.jsonl.

    Both numbers are byte offsets: the event's line starts at ``offset``, the next one at ``next_offset`` (what
    ``events --from`` takes to continue). On the wire that is ``end``, which in the mirror stream (``End``) is a
    status: in code each has its own name."""

    offset: int
    next_offset: int
    event: dict

    def to_wire(self) -> dict:
        return {"offset": self.offset, "end": self.next_offset, "event": self.event}

    def encode(self) -> bytes:
        return dumps(self.to_wire())


def parse_event_line(line: bytes) -> EventLine:
    """One line of ``grpo-tui events`` (with or without its newline)."""
    if len(line) > MAX_LINE:
        _fail("", f"a line of {len(line)} bytes", f"a line of at most {MAX_LINE} bytes")
    try:
        data = loads(line)
    except ValueError:
        _fail("", line[:60], "a JSON line")
    f = _Fields(data)
    offset = f.whole("offset")
    next_offset = f.whole("end")
    if next_offset <= offset:
        _fail("end", next_offset, f"a byte offset past offset {offset}")
    event = f.get("event")
    if not isinstance(event, dict):
        _fail("event", event, "a JSON object")
    return EventLine(offset, next_offset, event)


# -- the mirror stream: one JSON object per line ----------------------------------------------------------


class _Message:
    def to_wire(self) -> dict:
        raise NotImplementedError

    def encode(self) -> bytes:
        """The line the sender writes (without its newline)."""
        return dumps(self.to_wire())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@dataclass(frozen=True)
class RunHeader(_Message):
    """``{"run": {"run_id", "path", "format_version"}}``: the first line, which run the stream is of."""

    run_id: str
    path: str
    format_version: int

    def to_wire(self) -> dict:
        return {"run": {"run_id": self.run_id, "path": self.path, "format_version": self.format_version}}


@dataclass(frozen=True)
class Append(_Message):
    """``{"append": FILE, "offset": N, "data": BASE64}``: bytes of an appended file at the host's offset."""

    file: str
    offset: int
    data: bytes

    def to_wire(self) -> dict:
        return {"append": self.file, "offset": self.offset, "data": _b64(self.data)}


@dataclass(frozen=True)
class WholeFile(_Message):
    """``{"file": FILE, "data": BASE64}``: config.yaml or state.json, whole."""

    file: str
    data: bytes

    def to_wire(self) -> dict:
        return {"file": self.file, "data": _b64(self.data)}


@dataclass(frozen=True)
class StatusReport(_Message):
    """``{"status": S, "alerts": [...]}``: the status and watcher alerts, as only the host can judge them."""

    status: Status
    alerts: tuple[HealthWarning, ...] = ()

    def to_wire(self) -> dict:
        return {"status": self.status.value, "alerts": [warning_record(a) for a in self.alerts]}


@dataclass(frozen=True)
class GpuReport(_Message):
    """``{"gpus": [...]}``: the host's GPUs."""

    gpus: tuple[GpuRecord, ...]

    def to_wire(self) -> dict:
        return {"gpus": [g.to_wire() for g in self.gpus]}


@dataclass(frozen=True)
class Reset(_Message):
    """``{"reset": FILE}``: the file was truncated or replaced on the host; the copy starts it again."""

    file: str

    def to_wire(self) -> dict:
        return {"reset": self.file}


@dataclass(frozen=True)
class End(_Message):
    """``{"end": STATUS}``: the last line; ``status``: the run's status when the stream ended.

    The key stays ``end`` on the wire, as every host and viewer of this stream sends and expects it; in code the
    field is ``status``, since in the events stream (``EventLine``) ``end`` is a byte offset."""

    status: Status

    def to_wire(self) -> dict:
        return {"end": self.status.value}


@dataclass(frozen=True)
class Heartbeat(_Message):
    """``{}``: nothing new; written while a run is quiet, so a dead link is noticed."""

    def to_wire(self) -> dict:
        return {}


MirrorMessage = RunHeader | Append | WholeFile | StatusReport | GpuReport | Reset | End | Heartbeat


def _file(value: Any, key: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        _fail(key, value, "one of " + ", ".join(allowed) + " (a file name of the run folder, not a path)")
    return value


def _data(value: Any) -> bytes:
    if not isinstance(value, str) or len(value) > MAX_LINE:
        _fail("data", value, "a base64 string")
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        _fail("data", value, "strict base64")
    if len(data) > MAX_DATA:
        _fail("data", f"{len(data)} bytes", f"at most {MAX_DATA} bytes")
    return data


def _run(m: dict) -> RunHeader:
    f = _Fields(m["run"], "run")
    return RunHeader(
        parse_run_id(f.get("run_id"), "run.run_id"), _host_path(f, "path"), f.whole("format_version", maximum=1 << 31)
    )


def _append(m: dict) -> Append:
    file = _file(m["append"], "append", APPENDED)
    offset = _Fields(m).whole("offset")
    data = _data(m.get("data"))
    if offset + len(data) > MAX_OFFSET:
        _fail("offset", offset, f"an offset that with its {len(data)} bytes stays below {MAX_OFFSET}")
    return Append(file, offset, data)


def _whole(m: dict) -> WholeFile:
    file, data = _file(m["file"], "file", WHOLE), _data(m.get("data"))
    if file == "state.json":
        try:
            parse_object(data, "state.json")  # the one reader's check: any fields, but one JSON object
        except StateError as exc:
            _fail("data", data[:40], f"state.json as a JSON object ({exc.why.partition(';')[0]})")
    return WholeFile(file, data)


def _status_report(m: dict) -> StatusReport:
    return StatusReport(_status(m["status"], "status"), _alerts(_Fields(m)))


_PARSERS = {
    "run": _run,
    "append": _append,
    "file": _whole,
    "status": _status_report,
    "gpus": lambda m: GpuReport(_gpus(_Fields(m))),
    "reset": lambda m: Reset(_file(m["reset"], "reset", APPENDED)),
    "end": lambda m: End(_status(m["end"], "end")),
}


def parse_mirror_message(message: Any) -> MirrorMessage | None:
    """The message a decoded stream line holds; None for a kind this version does not know (a newer host's)."""
    if not isinstance(message, dict):
        _fail("", message, "a JSON object")
    if not message:
        return Heartbeat()
    kinds = [k for k in _PARSERS if k in message]
    if len(kinds) > 1:
        _fail("", sorted(message), "one of the keys " + ", ".join(_PARSERS) + ", not several")
    return _PARSERS[kinds[0]](message) if kinds else None


MASK = b"#"  # the first byte of a masked line: not JSON, so every reader of the copy skips and counts it


def checked_lines(data: bytes) -> tuple[bytes, list[tuple[int, str]]]:
    """Complete lines of events.jsonl or samples.jsonl from a host, as the copy may hold them: each line that is
    not one JSON object (not UTF-8, not JSON, a ``1``) is masked, its bytes replaced by ``#`` and spaces of the
    same length, so the copy keeps the host's offsets and the next stream starts where the host's file does;
    the readers then skip that line and count it, as they would the host's own. A blank line is left as it is.
    Returns the lines and, per masked line, its offset in ``data`` and why."""
    bad: list[tuple[int, str]] = []
    start = 0
    out = None
    while start < len(data):
        stop = data.find(b"\n", start)
        stop = len(data) if stop < 0 else stop
        line = data[start:stop]
        why = None
        if line.strip():
            try:
                value = loads(line)
            except (ValueError, RecursionError):
                why = "not JSON"
            else:
                if not isinstance(value, dict):
                    why = f"a JSON {type(value).__name__}, not an object"
        if why is not None:
            if out is None:
                out = bytearray(data)
            out[start:stop] = MASK + b" " * (len(line) - 1)
            bad.append((start, why))
        start = stop + 1
    return (data if out is None else bytes(out)), bad


def parse_mirror_line(line: bytes) -> MirrorMessage | None:
    """One line of ``events --mirror`` (with or without its newline)."""
    if len(line) > MAX_LINE:
        _fail("", f"a line of {len(line)} bytes", f"a line of at most {MAX_LINE} bytes")
    try:
        message = loads(line)
    except ValueError:
        _fail("", line[:60], "a JSON line")
    return parse_mirror_message(message)
