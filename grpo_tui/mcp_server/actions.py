"""The tools that change a run: ``stop_run`` and ``resume_run``, served only with ``--allow-actions``.

A destructive call names the run by its whole id, never ``latest`` or a prefix (``Runs.find(spelled_out=True)``),
so the run an agent acts on is the one it read. Each action goes through the run's executor, as the app's and
``grpo-tui stop``'s do, and says who asked: ``mcp: CLIENT``, with the client's name as its ``initialize`` gave
it, cleaned. A stop records it in the run's ``stop_requested`` event and exit reason
(``services/lifecycle/stop_request.py``); a resume's plan is the executor's, as ``grpo-tui launch --resume``'s.
"""

from __future__ import annotations

from typing import Any

from ..executors.base import ExecutorError
from ..safe_text import clean_line
from ..services.lifecycle.stop_request import asker
from .read_tools import answer
from .runs import AnswerError, Runs

SOURCE = "mcp"
STOP_TIMEOUT = 300.0
ACTIONS_OFF = (
    "{tool} is an action, and this server was started without --allow-actions: nothing was done and run {run} "
    "goes on. Start the server with `grpo-tui mcp --allow-actions` to allow stopping and resuming runs."
)


def who(client: str | None) -> str:
    """Who asked, as the run's events record it: ``mcp: CLIENT``."""
    name = asker(client)
    return f"{SOURCE}: {name}" if name else SOURCE


def refuse(tool: str, run: str) -> AnswerError:
    return AnswerError(ACTIONS_OFF.format(tool=tool, run=clean_line(run)[:80] or "(none)"))


def stop_run(runs: Runs, run: str, force: bool = False, client: str | None = None, host: str | None = None) -> dict:
    found = runs.find(run, host, spelled_out=True)
    by = who(client)
    try:
        outcome = found.executor.stop(found, force=force, timeout=STOP_TIMEOUT, by=by)
    except ExecutorError as exc:
        raise AnswerError(f"stop_run {found.run_id}: {clean_line(exc)}") from None
    return answer(
        "stop_run",
        run_id=found.run_id,
        host=found.host,
        read_at=_now(),
        outcome=outcome.to_wire(),
        requested_by=by,
    )


def resume_run(
    runs: Runs, run: str, max_steps: int | None = None, client: str | None = None, host: str | None = None
) -> dict[str, Any]:
    found = runs.find(run, host, spelled_out=True)
    status = found.status()
    if status.is_live:
        raise AnswerError(f"run {found.run_id} is {status.value}: only an ended run is resumed")
    if max_steps is not None and max_steps < 1:
        raise AnswerError(f"max_steps {max_steps!r}: give a whole number from 1, the run's new length in steps")
    try:
        started = found.executor.resume(found, max_steps=max_steps)
    except ExecutorError as exc:
        raise AnswerError(f"resume_run {found.run_id}: {clean_line(exc)}") from None
    except Exception as exc:  # a launch error names the config field: it is the caller's to fix
        raise AnswerError(f"resume_run {found.run_id}: {clean_line(exc)}") from None
    return answer(
        "resume_run",
        run_id=found.run_id,
        host=found.host,
        read_at=_now(),
        resumed_run_id=started.run_id,
        path=str(started.path),
        pid=started.pid,
        requested_by=who(client),
    )


def _now() -> float:
    import time

    return time.time()
