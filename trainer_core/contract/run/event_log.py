"""Writing and reading ``events.jsonl``: append-only JSON lines, one typed event (``run/events.py``) each.

The app, the CLI and users' scripts read it without torch. Writers flush every line so a
reader sees a step as soon as it is logged; readers keep an unfinished last line buffered (the writer may
be mid-write, or may have died mid-write), so a torn tail never breaks them and never loses a line.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterable, Iterator
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any, cast

try:  # several times faster on large streams; the format is plain JSON either way
    import orjson
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - stdlib fallback keeps this module dependency-free
    orjson = None  # type: ignore[assignment]

    def _loads(data: bytes | bytearray | memoryview | str, /):  # orjson.loads' signature
        return json.loads(data if isinstance(data, str) else bytes(data))


from trainer_core.contract.run import signal_safe
from trainer_core.contract.run.events import Event, EventType, Metrics, UnknownEvent, clean, decode, problem

BLOCK_SIZE = 64 * 1024
SCAN_CHUNK = 4 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024 * 1024  # a longer line is skipped as bad, never held whole in memory
_ORJSON_OPTIONS = orjson.OPT_APPEND_NEWLINE if orjson else 0
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def dumps(record: dict) -> str:
    return json.dumps(clean(record), allow_nan=False, separators=(",", ":"))


def encode_line(record: dict) -> bytes:
    """One line's bytes, newline included: strict ASCII JSON, ``clean``'s values (NaN and infinities null, enums
    their value, tensors and numpy scalars numbers). orjson writes it without copying the record through ``clean``
    first (the trainer writes a line per step and per kept sample); the characters past ASCII in what it wrote are
    then escaped as ``json`` escapes them (``_ascii``), so text stays ``\\u`` escaped and no C1 control or
    bidirectional mark reaches a terminal that shows the file raw. A line orjson cannot write (an int past 64
    bits, a key that is not a string, a lone surrogate) goes the ``json`` way."""
    if orjson is not None:
        try:
            line = orjson.dumps(record, default=_plain, option=_ORJSON_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError
            pass
        else:
            return line if line.isascii() else _ascii(line)
    return (dumps(record) + "\n").encode("utf-8")


def _ascii(line: bytes) -> bytes:
    """orjson's UTF-8 line with each run of characters past ASCII written as ``\\u`` escapes (a surrogate pair past
    the BMP), as ``json`` writes them. Such characters occur only inside JSON strings, where an escape means the
    same character: the values are unchanged. Completions of a small or multilingual model often have some."""
    return _NON_ASCII.sub(lambda run: encode_basestring_ascii(run.group())[1:-1], line.decode("utf-8")).encode("ascii")


def _plain(value: Any) -> Any:
    """What orjson cannot write itself becomes what ``clean`` makes of it (a one-element tensor its number,
    anything else its ``str``); a float of a subclass (numpy's float64) a float."""
    cleaned = clean(value)
    if isinstance(cleaned, float):
        return float(cleaned)  # orjson writes float itself, not its subclasses
    if cleaned is value:
        raise TypeError(f"cannot write {type(value).__name__}")
    return cleaned


class JsonlWriter:
    """Appends one JSON object per line and flushes it; safe to reopen on the same file (resume), and safe for
    several processes appending to one file (the run's root and its trainer both write events.jsonl).

    Each line goes out under an exclusive ``flock`` of the file, in unbuffered ``write`` calls (repeated only
    after a short write), so nothing is held back in a buffer to be retried later and no other writer's line
    lands in the middle of this one. A write that fails part-way (a full disk) is undone while the lock is
    still held: the file is cut back to the offset where this line began, which no other writer can have
    moved, so the lines before stay intact and no other writer's bytes are touched. A file left ending
    mid-line by a writer that died is closed with a newline before the next line (readers skip that one torn
    line). The ``OSError`` raised names the file. Where ``flock`` is refused (some network filesystems), lines
    are still written, without the lock (docs/run-format.md says what holds on NFS).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        # read too: whether the file ends mid-line is looked at under the lock, before each line
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        self._fh = os.fdopen(fd, "ab", buffering=0)

    def write(self, record: dict) -> None:
        self.write_many((record,))

    def write_many(self, records: Iterable[dict]) -> None:
        """Several lines under one lock, in one ``write``: all of them land, or (a full disk) none does. A step's
        kept samples go out this way, so recording them costs one locked write, not one per sample."""
        data = b"".join(encode_line(record) for record in records)
        if not data:
            return
        with signal_safe.section():
            self._write_line(data)

    def _write_line(self, data: bytes) -> None:
        fd = self._fh.fileno()
        locked = _lock(fd)
        try:
            begin = os.fstat(fd).st_size  # with the lock held (and O_APPEND), this line starts here
            if _ends_mid_line(fd, begin):
                data = b"\n" + data  # a writer died mid-line: close its torn line first
            view, written = memoryview(data), 0
            try:
                while written < len(data):
                    written += self._write_some(view[written:])
            except OSError as exc:
                self._undo(fd, begin, written, data)
                raise OSError(exc.errno, exc.strerror, str(self.path)) from exc
        finally:
            if locked:
                _unlock(fd)

    def _write_some(self, data: memoryview) -> int:
        """One ``write`` of what is left of the line; the bytes it took (a short write takes fewer)."""
        return self._fh.write(data) or 0

    def _undo(self, fd: int, begin: int, written: int, data: bytes) -> None:
        """Cut the file back to where this line began (keeping a newline written to close a dead writer's
        torn line): only this writer's bytes, as the lock is still held. If that fails, the next line starts
        with a newline of its own (``write`` sees the file end mid-line)."""
        if not written:
            return
        keep = begin + 1 if data[:1] == b"\n" else begin
        try:
            os.ftruncate(fd, keep)
        except OSError:
            pass

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _ends_mid_line(fd: int, size: int) -> bool:
    try:
        return size > 0 and os.pread(fd, 1, size - 1) != b"\n"
    except OSError:
        return False


def _lock(fd: int) -> bool:
    """An exclusive lock of the file for one line; False where the filesystem refuses locks (written anyway)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        return False
    return True


def _unlock(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        pass


class EventWriter(JsonlWriter):
    """Writes typed events, stamped with the time of writing unless they carry one."""

    def emit(self, event: Event) -> dict:
        record = event.to_record()
        self.write(record)
        return record


class EventTail:
    """Reads new complete lines from a JSONL file by byte offset; keeps a torn last line for later.

    ``poll()`` returns the events appended since the last call. Lines that are complete but not valid
    JSON, or JSON but not an object (a disk-full truncation mid-file, a hand edit, a ``1``), are counted in
    ``bad_lines`` and skipped; ``first_bad`` says where the first one was (``(line number, why)``, counted from
    ``offset``'s line as line 1). ``lines``: the complete lines read so far (blank ones too).
    """

    def __init__(self, path: str | Path, offset: int = 0):
        self.path = Path(path)
        self.offset = offset
        self.bad_lines = 0
        self.lines = 0
        self.first_bad: tuple[int, str] | None = None

    def poll(self, max_bytes: int | None = None) -> list[Event]:
        return [decode(record) for record in self.poll_records(max_bytes)]

    def poll_records(self, max_bytes: int | None = None) -> list[dict]:
        """The JSON objects of the complete lines appended since the last call, not yet decoded (a reader
        that folds a long backlog handles metrics lines itself: decoding each costs more than parsing it)."""
        lines = self.poll_lines(max_bytes)
        parse, records = self.parse, []
        for number, line in enumerate(lines, self.lines - len(lines) + 1):
            record = parse(line, number)
            if record is not None:
                records.append(record)
        return records

    def poll_lines(self, max_bytes: int | None = None) -> list[bytes]:
        """The complete lines appended since the last call, without their newlines (blank ones too), for a reader
        that parses them its own way; ``parse`` is how a line is judged and counted. The first is line
        ``lines - len(result) + 1``."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read() if max_bytes is None else fh.read(max_bytes)
                if max_bytes is not None and len(data) == max_bytes and b"\n" not in data:
                    data = self._long_line(fh, data)  # one line longer than a chunk: read to its end
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        lines = data.split(b"\n")  # one pass in C; finding each line from Python costs more than the copy
        lines.pop()  # what follows the last newline: a torn line, or nothing
        self.lines += len(lines)
        return lines

    def parse(self, line: bytes, number: int) -> dict | None:
        """The JSON object a line holds; None for a blank line (no event, and no bad one) and for a line that is
        not JSON or not an object, which is counted in ``bad_lines`` (``number``: its line, from ``offset``'s line
        as line 1, names the first)."""
        try:
            obj = _loads(line)
        except (ValueError, RecursionError):  # orjson refuses deep nesting with a ValueError; json recurses
            if line.strip():
                self._bad(number, "not JSON")
            return None
        if isinstance(obj, dict):
            return obj
        self._bad(number, f"a JSON {type(obj).__name__}, not an object")
        return None

    def _long_line(self, fh, data: bytes) -> bytes:
        """The rest of a line that began in ``data``: the whole line when it ends within MAX_LINE_BYTES; else it
        is skipped (counted as bad, read no further than its newline) and nothing is returned; b"" while it is
        still being written."""
        parts, size = [data], len(data)
        while True:
            chunk = fh.read(min(4 * 1024 * 1024, MAX_LINE_BYTES + 1 - size) if size <= MAX_LINE_BYTES else 1 << 20)
            if not chunk:
                return b""  # the line is not finished yet: read again from its start next time
            newline = chunk.find(b"\n")
            if size <= MAX_LINE_BYTES:
                parts.append(chunk if newline < 0 else chunk[: newline + 1])
            size += len(chunk) if newline < 0 else newline + 1
            if newline >= 0:
                break
        if size <= MAX_LINE_BYTES + 1:
            return b"".join(parts)
        self.offset += size
        self.lines += 1
        self._bad(self.lines, f"longer than {MAX_LINE_BYTES} bytes")
        return b""

    def _bad(self, number: int, why: str) -> None:
        self.bad_lines += 1
        if self.first_bad is None:
            self.first_bad = (number, why)


def complete_size(path: str | os.PathLike) -> int:
    """Where the events written from now on begin: after the file's last complete line (0 without a file)."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(size - 65536, 0))
            tail = fh.read()
    except FileNotFoundError:
        return 0
    return size - len(tail) + tail.rfind(b"\n") + 1 if b"\n" in tail else size


def read_records(path: str | Path) -> list[dict]:
    """Every complete JSON object line of a JSONL file that is not an event stream (samples, inspections)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    records = []
    for line in data[: data.rfind(b"\n") + 1].splitlines():
        try:
            record = _loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def read_events(path: str | Path) -> list[Event]:
    """Every complete event in the file (an unfinished last line is ignored)."""
    return EventTail(path).poll()


# -- reading without parsing everything: the last events, or only some types ---------------------------


class BackwardLines:
    """The complete lines of a file, last first, read in blocks from the end; ``bytes_read`` counts the cost.

    The bytes after the last newline are an unfinished line (see docs/run-format.md) and are skipped.
    ``end`` reads the file as if it stopped at that offset.
    """

    def __init__(self, path: str | os.PathLike, end: int | None = None, block_size: int = BLOCK_SIZE):
        self.path = Path(path)
        self.end = end
        self.block_size = block_size
        self.bytes_read = 0

    def __iter__(self) -> Iterator[bytes]:
        try:
            fh = open(self.path, "rb")
        except FileNotFoundError:
            return
        with fh:
            pos = fh.seek(0, os.SEEK_END) if self.end is None else self.end
            pending, torn = b"", True
            while pos > 0:
                size = min(self.block_size, pos)
                pos -= size
                fh.seek(pos)
                buf = fh.read(size) + pending
                self.bytes_read += size
                if torn:
                    newline = buf.rfind(b"\n")
                    if newline < 0:
                        pending = b""
                        continue
                    buf, torn = buf[:newline], False
                pending, *complete = buf.split(b"\n")
                for line in reversed(complete):
                    if line.strip():
                        yield line
            if not torn and pending.strip():
                yield pending


def parse_line(line: bytes) -> Event | None:
    """One line as an event; None for a line that is not a JSON object, or a known event whose fields have the
    wrong kind (decode's rejected ``UnknownEvent``: a ``metrics`` line with ``"step": "x"`` is no metrics event)."""
    event = read_line(line)
    return None if isinstance(event, str) else event


def read_line(line: bytes) -> Event | str:
    """One line as an event, or why it is none, in the words the monitor uses (``not JSON``, ``a JSON int, not an
    object``, ``metrics: step must be …``)."""
    try:
        record = _loads(line)
    except (ValueError, RecursionError):  # orjson refuses deep nesting with a ValueError; json recurses
        return "not JSON"
    return _read_record(record)


def _read_record(record: object) -> Event | str:
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    event = decode(record)
    return f"{event.type_name}: {event.rejected}" if isinstance(event, UnknownEvent) and event.rejected else event


def line_problem(line: bytes) -> str | None:
    """Why a line is no event (``read_line``'s words), or None when it is one. Judged as ``decode`` judges it
    (``events.problem``), without building the event: a check costs about a parse."""
    try:
        record = _loads(line)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    why = problem(record)
    return None if why is None else f"{record.get('type')}: {why}"


def last_events(lines: Iterable[bytes], type: EventType, count: int = 1) -> list[Event]:
    """The last ``count`` events of ``type`` from ``lines`` read backwards, oldest first."""
    found: list[Event] = []
    needle = f'"{type}"'.encode()
    for line in lines:
        if needle not in line:
            continue
        event = parse_line(line)
        if event is not None and event.type == type:
            found.append(event)
            if len(found) >= count:
                break
    return found[::-1]


def scan_events(
    path: str | os.PathLike, types: tuple[EventType, ...], start: int = 0, end: int | None = None
) -> tuple[list[Event], int]:
    """Events of ``types`` between two offsets, and the offset after the last complete line read.

    Only lines containing a type's quoted name are parsed, so scanning a large file costs about a read.
    """
    needles = [f'"{t}"'.encode() for t in types]
    found: list[Event] = []
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return found, start
    with fh:
        fh.seek(start)
        pos = offset = start  # pos: bytes read so far; offset: where the unread part of a line begins
        pending = b""
        while end is None or pos < end:
            data = fh.read(SCAN_CHUNK if end is None else min(SCAN_CHUNK, end - pos))
            if not data:
                break
            pos += len(data)
            buf = pending + data
            cut = buf.rfind(b"\n") + 1
            found.extend(e for e in _events_in(buf[:cut], needles) if e.type in types)
            offset, pending = offset + cut, buf[cut:]
    return found, offset


def _events_in(buf: bytes, needles: list[bytes]) -> Iterator[Event]:
    starts = set()
    for needle in needles:
        at = buf.find(needle)
        while at >= 0:
            starts.add(buf.rfind(b"\n", 0, at) + 1)
            at = buf.find(needle, at + 1)
    for begin in sorted(starts):
        event = parse_line(buf[begin : buf.index(b"\n", begin)])
        if event is not None:
            yield event


def last_step(path: str | os.PathLike) -> int:
    """The step of the stream's last metrics event (0 before the first), read from the end of the file."""
    last = last_events(BackwardLines(path), EventType.METRICS)
    return cast(Metrics, last[0]).step if last else 0  # decode makes every metrics line a Metrics


def tail_events(source: str | os.PathLike | BackwardLines) -> tuple[Event | None, Metrics | None]:
    """The file's last event and its last ``metrics`` event (None when none), reading from the end."""
    lines = source if isinstance(source, BackwardLines) else BackwardLines(source)
    last_event: Event | None = None
    for line in lines:
        event = parse_line(line)
        if event is None:
            continue
        last_event = last_event or event
        if isinstance(event, Metrics):
            return last_event, event
    return last_event, None
