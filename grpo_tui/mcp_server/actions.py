"""The tools that change a run: ``stop_run``, ``resume_run`` and ``rollback_run``, served only with ``--allow-actions``.

A destructive call names the run by its whole id, never ``latest`` or a prefix (``Runs.find(spelled_out=True)``),
so the run an agent acts on is the one it read. Each action goes through the run's executor, as the app's and
``grpo-tui stop``'s do, and says who asked: ``mcp: CLIENT``, with the client's name as its ``initialize`` gave
it, cleaned. A stop records it in the run's ``stop_requested`` event and exit reason
(``services/lifecycle/stop_request.py``); a resume's plan is the executor's, as ``grpo-tui launch --resume``'s, and
its record (state.json's ``resume_change``) says ``by`` mcp and who in ``reason``. A rollback is ``grpo-tui
rollback``'s: the live run stopped first (``services/lifecycle/rollback.py``), then resumed from the checkpoint
named, with the settings changed; its ``rewound`` event says by mcp, and the client in its reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grpo_tui.services.lifecycle.rollback import checked_reason, checkpoint_of, stop_first
from trainer_core.contract.config.resume_changes import parse_sets
from trainer_core.contract.config.resume_plan import ResumeChange, ResumePlan
from trainer_core.contract.config.run_config import ConfigError
from trainer_core.contract.run.events import RewindBy

from ..executors.base import ExecutorError, Launched
from ..executors.local import LocalExecutor
from ..safe_text import clean_line
from ..services.lifecycle.stop_request import asker
from .read_tools import answer
from .runs import AnswerError, FoundRun, Runs
from .untrusted import untrusted

SOURCE = RewindBy.MCP.value
STOP_TIMEOUT = 300.0
ACTIONS_OFF = (
    "{tool} is an action, and this server was started without --allow-actions: nothing was done and run {run} "
    "goes on. Start the server with `grpo-tui mcp --allow-actions` to allow stopping, resuming and rolling back runs."
)
SetValue = str | int | float | bool


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
    by = who(client)
    try:
        if isinstance(found.executor, LocalExecutor):  # the plan is made here: it records who asked
            change = ResumeChange(by=SOURCE, reason=f"resume_run asked by {by}")
            started = found.executor.resume(found, max_steps=max_steps, change=change)
        else:  # a host makes the plan itself (``launch --resume --json`` there)
            started = found.executor.resume(found, max_steps=max_steps)
    except ExecutorError as exc:
        raise AnswerError(f"resume_run {found.run_id}: {clean_line(exc)}") from None
    except Exception as exc:  # a launch error names the config field: it is the caller's to fix
        raise AnswerError(f"resume_run {found.run_id}: {clean_line(exc)}") from None
    return answer("resume_run", **_started(found, started), requested_by=by)


def rollback_run(
    runs: Runs,
    run: str,
    to: str,
    sets: Mapping[str, SetValue] | None = None,
    reason: str | None = None,
    client: str | None = None,
    host: str | None = None,
) -> dict[str, Any]:
    """``grpo-tui rollback RUN --to TO --set KEY=VALUE --reason TEXT``: every input checked before the run is
    touched, a live run stopped first, then resumed from ``to`` by this machine's executor."""
    found = runs.find(run, host, spelled_out=True)
    if not isinstance(found.executor, LocalExecutor):
        raise AnswerError(
            f"rollback_run {found.run_id}: a run on host {found.host} is rolled back by the host's own grpo-tui, "
            f"which this server does not drive: run `grpo-tui rollback {found.run_id} --host {found.host} --to "
            f"{clean_line(to)[:20] or 'WHICH'}` (nothing was done)"
        )
    by = who(client)
    try:
        checkpoint = checkpoint_of(to)
        told = checked_reason(reason)
        change = ResumeChange(parse_sets(_words(sets)), by=SOURCE, reason=_reason(told, by))
    except ConfigError as exc:
        raise AnswerError(f"rollback_run {found.run_id}: {_tool_words(exc)} (nothing was done)") from None
    try:
        stopped = stop_first(found.folder, timeout=STOP_TIMEOUT, by=by)
    except ConfigError as exc:
        raise AnswerError(f"rollback_run {found.run_id}: {clean_line(exc)}") from None
    plans: list[ResumePlan] = []
    try:
        started = found.executor.resume(found, None, plans.append, checkpoint=checkpoint, change=change)
    except ExecutorError as exc:
        raise AnswerError(f"rollback_run {found.run_id}: {_tool_words(exc)}") from None
    plan = plans[0]
    return answer(
        "rollback_run",
        **_started(found, started),
        checkpoint=plan.checkpoint.name,
        from_step=plan.reached,
        to_step=plan.checkpoint.step,
        max_steps=plan.max_steps,
        revision=plan.revision,
        stopped=None if stopped is None else stopped.to_wire(),
        requested_by=by,
        **untrusted(None, changes=plan.changes, reason=told),
    )


def _started(found: FoundRun, started: Launched) -> dict[str, Any]:
    """The head of a resume's answer: the run, and the leg started (its process, or its Slurm job)."""
    return {
        "run_id": found.run_id,
        "host": found.host,
        "read_at": _now(),
        "resumed_run_id": started.run_id,
        "path": str(started.path),
        "pid": started.pid,
        "slurm_job_id": started.slurm_job_id,
    }


def _words(sets: Mapping[str, SetValue] | None) -> list[str]:
    """``{"lr": 1e-5, "health.kl_high": 2}`` as ``--set``'s words (a flag as true or false)."""
    return [f"{key}={str(value).lower() if isinstance(value, bool) else value}" for key, value in (sets or {}).items()]


def _reason(reason: str | None, by: str) -> str:
    """The rewound event's reason: the caller's, and who asked."""
    return f"{reason} (rollback_run asked by {by})" if reason else f"rollback_run asked by {by}"


def _tool_words(exc: Exception) -> str:
    """A CLI error's words as the tool's: ``--to`` is ``to``, ``--set`` is ``set``, ``--reason`` is ``reason``."""
    text = clean_line(exc)
    for flag, name in (("--to ", "to "), ("--set ", "set "), ("--reason ", "reason ")):
        text = text.replace(flag, name)
    return text


def _now() -> float:
    import time

    return time.time()
