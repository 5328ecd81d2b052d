"""Why a line of events.jsonl is no event the monitor's stream can use, which line it was, and the one line that
tells a user how many lines of a file were skipped.

The stream (``run_stream.py``) folds metrics lines column by column without decoding them one by one, so it
judges their step itself; every other line goes through ``decode``, whose rejected ``UnknownEvent`` says why.
Both are counted. Where the first one is (its line number) is found by reading that poll's bytes again, once
per stream: the good lines never pay for a bad one.

``skipped_notice`` words it for every view: the monitor's notice and ``grpo-tui watch --once``'s line (which
checks the end of the file only: ``line_check.py``).
"""

from __future__ import annotations

import os

from orjson import loads

from trainer_core.contract.run.events import problem
from trainer_core.contract.run.json_values import is_whole
from trainer_core.contract.run.line_check import SkippedLines

MAX_STEP = 1 << 63  # steps are kept as signed 64-bit integers: a larger one is no step to chart


def parse_record(line: bytes) -> dict | None:
    """One line's JSON object, or None (not JSON, or not an object)."""
    try:
        record = loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def rejection(record: dict) -> str | None:
    """Why a line's object is no event the stream can use (as ``decode`` judges it: ``events.problem``), or None."""
    why = problem(record)
    return None if why is None else f"{record.get('type')}: {why}"


def _too_far(record: dict) -> bool:
    return record.get("type") == "metrics" and is_whole(record.get("step"), MAX_STEP)


def line_of_rejected(path: str | os.PathLike, start: int, end: int) -> int:
    """The number (from 1) of the first line between byte offsets ``start`` and ``end`` of ``path`` that is a
    rejected event (1 when none is found: the file changed under the reader)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read(end - start)
    except OSError:
        return 1
    for n, line in enumerate(data.split(b"\n"), 1):
        record = parse_record(line)
        if record is not None and (rejection(record) is not None or _too_far(record)):
            return n
    return 1


def skipped_notice(count: int, where: str, scope: str = "") -> str:
    """One line: how many lines of a file were skipped, and where the first is and why (``where``: ``FILE line N:
    why`` or ``FILE at byte B: why``, whose first word names the file); ``scope``: which part was read, when not
    all of it."""
    lines = "1 line" if count == 1 else f"{count} lines"
    return f"{lines} of {where.partition(' ')[0]} skipped{scope}, the rest shown; first: {where}"


def end_notice(skipped: SkippedLines) -> str:
    """``skipped_notice`` for a check of a file's end (``line_check.check_end``), saying where the check began."""
    scope = f" (checked from byte {skipped.checked_from} to its end)" if skipped.checked_from else ""
    return skipped_notice(skipped.count, skipped.first, scope)
