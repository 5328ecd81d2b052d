"""Which lines at the end of events.jsonl a reader skips: for the views that read a run from the end of the file.

``grpo-tui runs`` and ``grpo-tui watch --once`` take a run's last step and last events from the end of
events.jsonl and never parse a long file whole (thousands of runs are listed at a time; the monitor is the view
that reads every line). So they judge the complete lines of the file's last CHECK_BYTES (64 KiB: a few hundred
steps, about what the read of the last step costs already) as the monitor judges every line (``line_problem``: a
JSON object, and a known type's fields of the right kind). A file no longer than that is checked whole and its
first bad line named by number (``events.jsonl line 7: not JSON``), as the monitor names it; in a longer one by
its byte offset, and ``checked_from`` says where the check began. The torn last line (no newline yet: a writer
may still be finishing it) and the partial line the window starts in are not judged, nor are blank lines.

A finished run's summary stores the check made at its end (``summary.py``), so listing it still reads one small
file; its events cannot have changed since, or the summary would no longer be trusted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from trainer_core.contract.run.event_log import line_problem
from trainer_core.contract.run.json_values import whole_or_none

CHECK_BYTES = 64 * 1024
EVENTS_FILE = "events.jsonl"


@dataclass(frozen=True)
class SkippedLines:
    """Complete lines of a file that a reader skipped: how many, where the first is and why (``first``: ``FILE line
    N: why`` or ``FILE at byte B: why``), and the byte offset the check began at (0: the whole file)."""

    count: int
    first: str
    checked_from: int = 0

    def to_record(self) -> dict:
        """As a summary stores it and ``grpo-tui runs --json`` sends it (under its file's name)."""
        return {"count": self.count, "first": self.first, "checked_from": self.checked_from}

    @classmethod
    def from_record(cls, record: object) -> SkippedLines | None:
        """``to_record``'s record; None when ``record`` is not one."""
        if not isinstance(record, dict):
            return None
        count, first, start = (
            whole_or_none(record.get("count")),
            record.get("first"),
            whole_or_none(record.get("checked_from", 0)),
        )
        if not count or not isinstance(first, str) or start is None:
            return None
        return cls(count, first, start)


def check_end(path: str | os.PathLike, size: int = CHECK_BYTES) -> SkippedLines | None:
    """The lines among the complete lines of the last ``size`` bytes of an event stream that are no event; None
    when there are none (or no file)."""
    name = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            end = fh.seek(0, os.SEEK_END)
            start = max(0, end - size - 1)  # one byte more: whether the window starts at a line's start
            fh.seek(start)
            data = fh.read(end - start)
    except OSError:
        return None
    data = data[: data.rfind(b"\n") + 1]  # the torn last line is not judged
    if start:  # the line the window starts in is not whole
        cut = data.find(b"\n") + 1
        data, start = data[cut:], start + cut
    count, first, at = 0, "", start
    for number, line in enumerate(data.split(b"\n")[:-1], 1):
        why = line_problem(line) if line.strip() else None
        if why is not None:
            count += 1
            if not first:
                first = f"{name} line {number}: {why}" if start == 0 else f"{name} at byte {at}: {why}"
        at += len(line) + 1
    return SkippedLines(count, first, start) if count else None
