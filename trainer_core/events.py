"""The events stream: append-only JSON lines written by the trainer, read by everything else.

Stdlib only: the app, the CLI and users' scripts read it without torch. Writers flush every line so a
reader sees a step as soon as it is logged; readers keep an unfinished last line buffered (the writer may
be mid-write, or may have died mid-write), so a torn tail never breaks them and never loses a line.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

try:  # several times faster on large streams; the format is plain JSON either way
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - stdlib fallback keeps this module dependency-free
    _loads = json.loads

EVENT_TYPES = (
    "run_started", "metrics", "checkpoint", "stop_requested", "run_finished", "error", "warning", "summary",
)


def clean(value: Any) -> Any:
    """Make a value strict-JSON safe: NaN/inf become None, tensors and numpy scalars become numbers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
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


def dumps(event: dict) -> str:
    return json.dumps(clean(event), allow_nan=False, separators=(",", ":"))


class JsonlWriter:
    """Appends one JSON object per line and flushes it; safe to reopen on the same file (resume)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._fh = os.fdopen(fd, "a", encoding="utf-8")

    def write(self, record: dict) -> None:
        self._fh.write(dumps(record) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class EventWriter(JsonlWriter):
    """Writes typed, timestamped events."""

    def emit(self, type: str, **fields: Any) -> dict:
        event = {"type": type, "time": round(time.time(), 3), **fields}
        self.write(event)
        return event


class EventTail:
    """Reads new complete lines from a JSONL file by byte offset; keeps a torn last line for later.

    ``poll()`` returns the events appended since the last call. Lines that are complete but not valid
    JSON (a disk-full truncation mid-file, a hand edit) are counted in ``bad_lines`` and skipped.
    """

    def __init__(self, path: str | Path, offset: int = 0):
        self.path = Path(path)
        self.offset = offset
        self.bad_lines = 0

    def poll(self, max_bytes: int | None = None) -> list[dict]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read() if max_bytes is None else fh.read(max_bytes)
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        chunk = data[: end + 1]
        self.offset += len(chunk)
        events = []
        for line in chunk.splitlines():
            if not line.strip():
                continue
            try:
                obj = _loads(line)
            except ValueError:
                self.bad_lines += 1
                continue
            if isinstance(obj, dict):
                events.append(obj)
            else:
                self.bad_lines += 1
        return events


def read_events(path: str | Path) -> list[dict]:
    """Every complete event in the file (an unfinished last line is ignored)."""
    return EventTail(path).poll()


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
