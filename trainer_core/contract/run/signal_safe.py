"""Run-folder writes that a signal handler must not interrupt, and a way for the handler to wait for them.

Python runs a signal handler in the main thread between two bytecodes, so it can land in the middle of a
state.json merge (which holds the run folder's ``flock``) or of an events.jsonl line. A handler that then
writes to the run folder itself would wait for a lock its own interrupted frame holds (a process deadlocked
on itself, never exiting), or write its line into the middle of another. Each such write runs inside
``section()``; a handler does its work through ``when_safe()``, which runs it at once outside a section and
otherwise as soon as the outermost section ends (milliseconds later). A third signal while work is still
waiting means the section itself is stuck (a hung filesystem): ``overdue()`` says so, and the handler exits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_depth = 0
_waiting: list[Callable[[], None]] = []


def _main() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def section() -> Iterator[None]:
    """A run-folder write that a signal handler waits for (only the main thread runs handlers)."""
    global _depth
    if not _main():
        yield
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _run_waiting()


def _run_waiting() -> None:
    while _waiting:
        _waiting.pop(0)()


def when_safe(work: Callable[[], None]) -> None:
    """Run ``work`` now, or when the write the handler interrupted has ended."""
    if _depth and _main():
        _waiting.append(work)
    else:
        work()


def overdue() -> bool:
    """Some work of a handler is still waiting for a write to end."""
    return bool(_waiting)
