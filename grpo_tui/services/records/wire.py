"""What a remote host sends back, checked where it arrives: the one definition of the remote wire.

A host is driven through its own grpo-tui (``grpo_tui/executors/ssh.py``): the replies of its ``info``,
``runs``, ``launch`` and ``stop --json`` and the lines of its ``events --mirror`` stream (written by
``grpo_tui/services/serving/event_feed.py``, applied by ``grpo_tui/executors/mirror.py``) are all this machine takes
from it, and a broken or compromised host may send anything. A run id becomes a local folder name, an offset
a seek in a local file, a number a chart's value; so each message kind is a frozen dataclass that is parsed
into or raises ``WireError`` naming the field, the value and what was expected. Code past the parsers trusts
the types. The sender builds its mirror messages, its event lines, its ``runs --json`` rows, its ``info`` and
its ``stop --json`` reply from the same classes (``encode``, ``to_wire``), so the two sides cannot drift apart;
the JSON itself is documented in docs/hosts.md. The records that are also the app's own types declare their
fields once, with their checks (``fields.wire``), and decode themselves (``from_wire``): a row is a ``RunInfo``
(``run_row.py``), a stop a ``StopOutcome`` (``stop_outcome.py``), a host's ``info`` a ``HostInfo``
(``host_info.py``), a GPU a ``GPU`` (``gpu.py``). ``LaunchReply`` is also what an executor returns for a run of
this machine (``grpo_tui/executors/base.py``): one record, wherever the run is.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from orjson import dumps, loads

from grpo_tui.services.records.fields import (
    APPENDED,
    HOST_PATH,
    MAX_OFFSET,
    Fields,
    WireError,
    fail,
    parse_run_id,
    parse_status,
)
from grpo_tui.services.records.gpu import GPU
from grpo_tui.services.records.host_info import TRAIN_EXTRA as TRAIN_EXTRA  # imported from here too
from grpo_tui.services.records.host_info import gpus_of, gpus_wire
from grpo_tui.services.records.host_info import missing_trainer as missing_trainer  # imported from here too
from grpo_tui.services.records.run_row import RunInfo, parse_alerts
from trainer_core.contract.run.events import HealthWarning
from trainer_core.contract.run.state import StateError, parse_object
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import warning_record

WHOLE = ("config.yaml", "state.json")  # copied whole whenever they change
MAX_DATA = 16 << 20  # decoded bytes in one message (the sender's chunks are 1 MiB, whole files are small)
MAX_LINE = MAX_DATA * 4 // 3 + 4096  # one stream line: the base64 of MAX_DATA and the JSON around it


# -- replies to commands --------------------------------------------------------------------------------


def parse_run_rows(data: Any) -> tuple[list[RunInfo], list[str]]:
    """The valid rows of a ``runs --json`` reply, and one problem per row that is not (``row N: …``).

    Raises WireError when the reply is not a list at all."""
    if not isinstance(data, list):
        fail("", data, "a JSON list of runs")
    rows, problems, seen = [], [], set()
    for n, item in enumerate(data, 1):
        try:
            row = RunInfo.from_wire(item)
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
class LaunchReply:
    """``launch --json`` (and ``launch --resume --json``): the run that was started there."""

    run_id: str
    path: str
    pid: int | None = None
    slurm_job_id: str | None = None


def parse_launch_reply(data: Any) -> LaunchReply:
    f = Fields(data)
    return LaunchReply(
        parse_run_id(f.get("run_id")),
        f.check("path", HOST_PATH),
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
    f = Fields(data)
    problems = []
    for i, item in enumerate(f.items("problems")):
        p = Fields(item, f"problems[{i}]")
        problems.append(Problem(p.text("field"), p.text("message", optional=False)))
    ok = f.flag("ok")
    if not ok and not problems:
        fail("problems", f.get("problems"), "at least one problem when ok is false")
    placement = f.get("placement")
    if placement is not None and not isinstance(placement, dict):
        fail("placement", placement, "a JSON object or null")
    notes = f.items("notes")
    if not all(isinstance(n, str) for n in notes):
        fail("notes", notes, "a list of strings")
    return LaunchCheck(ok, tuple(problems), placement, tuple(notes))


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
        fail("", f"a line of {len(line)} bytes", f"a line of at most {MAX_LINE} bytes")
    try:
        data = loads(line)
    except ValueError:
        fail("", line[:60], "a JSON line")
    f = Fields(data)
    offset = f.whole("offset")
    next_offset = f.whole("end")
    if next_offset <= offset:
        fail("end", next_offset, f"a byte offset past offset {offset}")
    event = f.get("event")
    if not isinstance(event, dict):
        fail("event", event, "a JSON object")
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

    gpus: tuple[GPU, ...]

    def to_wire(self) -> dict:
        return {"gpus": gpus_wire(self.gpus)}


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
        fail(key, value, "one of " + ", ".join(allowed) + " (a file name of the run folder, not a path)")
    return value


def _data(value: Any) -> bytes:
    if not isinstance(value, str) or len(value) > MAX_LINE:
        fail("data", value, "a base64 string")
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        fail("data", value, "strict base64")
    if len(data) > MAX_DATA:
        fail("data", f"{len(data)} bytes", f"at most {MAX_DATA} bytes")
    return data


def _run(m: dict) -> RunHeader:
    f = Fields(m["run"], "run")
    return RunHeader(
        parse_run_id(f.get("run_id"), "run.run_id"),
        f.check("path", HOST_PATH),
        f.whole("format_version", maximum=1 << 31),
    )


def _append(m: dict) -> Append:
    file = _file(m["append"], "append", APPENDED)
    offset = Fields(m).whole("offset")
    data = _data(m.get("data"))
    if offset + len(data) > MAX_OFFSET:
        fail("offset", offset, f"an offset that with its {len(data)} bytes stays below {MAX_OFFSET}")
    return Append(file, offset, data)


def _whole(m: dict) -> WholeFile:
    file, data = _file(m["file"], "file", WHOLE), _data(m.get("data"))
    if file == "state.json":
        try:
            parse_object(data, "state.json")  # the one reader's check: any fields, but one JSON object
        except StateError as exc:
            fail("data", data[:40], f"state.json as a JSON object ({exc.why.partition(';')[0]})")
    return WholeFile(file, data)


def _status_report(m: dict) -> StatusReport:
    return StatusReport(parse_status(m["status"], "status"), parse_alerts(m.get("alerts"), "alerts"))


_PARSERS = {
    "run": _run,
    "append": _append,
    "file": _whole,
    "status": _status_report,
    "gpus": lambda m: GpuReport(gpus_of(m["gpus"], "gpus")),
    "reset": lambda m: Reset(_file(m["reset"], "reset", APPENDED)),
    "end": lambda m: End(parse_status(m["end"], "end")),
}


def parse_mirror_message(message: Any) -> MirrorMessage | None:
    """The message a decoded stream line holds; None for a kind this version does not know (a newer host's)."""
    if not isinstance(message, dict):
        fail("", message, "a JSON object")
    if not message:
        return Heartbeat()
    kinds = [k for k in _PARSERS if k in message]
    if len(kinds) > 1:
        fail("", sorted(message), "one of the keys " + ", ".join(_PARSERS) + ", not several")
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
        fail("", f"a line of {len(line)} bytes", f"a line of at most {MAX_LINE} bytes")
    try:
        message = loads(line)
    except ValueError:
        fail("", line[:60], "a JSON line")
    return parse_mirror_message(message)
