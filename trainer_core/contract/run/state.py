"""The one reader of ``state.json`` (and of the stop request beside it): typed fields, or a named error.

Writers replace state.json atomically, but readers also meet files copied half-way, edited by hand, planted,
or written by another version: ``[]``, a JSON string, ``null``, ``"pid": "abc"``, ``"status": 5``. Every
reader of a run folder (the trainer, its root process, the runs list, the monitor, ``grpo-tui stop``, a
resume) goes through ``read_state``, so each meets such a file the same way and none meets it as a traceback:

- a file that is not one JSON object (not UTF-8, torn, another JSON value) reads as an empty state whose
  ``problems`` hold one ``StateError`` naming the file and why;
- a field the format defines (docs/run-format.md) with a value of the wrong type is left out, as if absent,
  with a ``StateError`` naming the file, the field and the value;
- a missing file is an empty state with ``missing`` set: a run whose trainer has not written yet.

Fields the format does not define pass through untouched (a newer version's). orjson parses: a runs list
reads ten thousand of these files.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

try:
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - the stdlib parser reads the same files
    import json

    def _loads(data: bytes, /):
        return json.loads(data)


from trainer_core.contract.run.json_values import is_number, is_text, is_whole
from trainer_core.contract.run.status import Status

FIX = (
    "the run is read as if it had none (docs/run-format.md, state.json): restore it from a copy, or resume the "
    "run to write a new one"
)


class StateError(ValueError):
    """A state.json (or stop request) that cannot be used as it is: the file, the field, the value and why."""

    def __init__(self, path: str | os.PathLike, why: str, field: str | None = None):
        self.path, self.field, self.why = str(path), field, why
        where = f"{self.path}: {field}" if field else self.path
        super().__init__(f"{where}: {why}")


def _whole(value) -> bool:
    return is_whole(value, None)


_IS: dict[str, tuple[Callable[[object], bool], str]] = {
    "whole": (_whole, "a whole number"),
    "pid": (lambda v: is_whole(v, 1, (1 << 31) - 1), "a process id (a whole number above 0)"),
    "number": (is_number, "a finite number (unix seconds)"),
    "text": (is_text, "a string"),
    "object": (lambda v: isinstance(v, dict), "a JSON object"),
    "list": (lambda v: isinstance(v, list), "a JSON list"),
    "job": (lambda v: isinstance(v, str) or _whole(v), "a Slurm job id (a string)"),
}

FIELDS: dict[str, str] = {
    "format_version": "whole",
    "run_id": "text",
    "status": "text",
    "pid": "pid",
    "pid_start_time": "number",
    "root_pid": "pid",
    "root_start_time": "number",
    "command": "list",
    "placement": "object",
    "vllm_server": "object",
    "host": "text",
    "started": "number",
    "ended": "number",
    "updated": "number",
    "max_steps": "whole",
    "last_step": "whole",
    "exit_reason": "text",
    "summary": "object",
    "resume_from": "text",
    "resumed_at": "number",
    "restarts": "whole",
    "before_resume": "object",
    "resume_skipped": "list",
    "executor": "text",
    "slurm_job_id": "job",
    "slurm_script": "text",
    "slurm_restart": "whole",
    "slurm_node": "text",
    "slurm_end_time": "number",
    "launch_dir": "text",
    "hardware_fallbacks": "list",
}
"""The fields of state.json the format defines, each with its kind; ``null`` is allowed for every one."""


class RunState(dict):
    """state.json's fields, each of the type the format gives it (a mapping, as the file is).

    ``problems``: a ``StateError`` for the file when it is not a JSON object, or one per field left out;
    ``missing``: there is no file (yet)."""

    __slots__ = ("missing", "path", "problems")

    def __init__(self, fields=(), path: str | os.PathLike = "state.json", problems=(), missing: bool = False):
        super().__init__(fields)
        self.path, self.problems, self.missing = Path(path), tuple(problems), missing

    @property
    def status(self) -> Status | None:
        """The status it records; None when absent or not one this version knows."""
        return Status.parse(self.get("status"))


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value) -> str:
    return {list: "a list", str: "a string", type(None): "null", bool: "true/false"}.get(type(value), "a number")


def parse_object(data: bytes, path: str | os.PathLike) -> dict:
    """``data`` as one JSON object; StateError naming ``path`` when it is not UTF-8 JSON or not an object."""
    try:
        value = _loads(data)
    except ValueError:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise StateError(path, f"it is not UTF-8 text; {FIX}") from None
        raise StateError(path, f"it is not valid JSON (torn, cut short or edited: {len(data)} bytes); {FIX}") from None
    if not isinstance(value, dict):
        raise StateError(path, f"it holds {_kind(value)} ({_show(value)}), not a JSON object; {FIX}")
    return value


def parse_state(data: bytes, path: str | os.PathLike = "state.json") -> RunState:
    """state.json's bytes as a ``RunState``; StateError when they are not one JSON object."""
    fields = parse_object(data, path)
    problems = []
    for key, value in fields.items():
        kind = FIELDS.get(key)
        if kind is None or value is None:
            continue
        check, what = _IS[kind]
        if not check(value):
            problems.append(StateError(path, f"{_show(value)} is not {what}; it is read as absent", key))
    for problem in problems:
        del fields[problem.field]
    return RunState(fields, path, problems)


def read_state(path: str | os.PathLike) -> RunState:
    """The state.json at ``path``, never an exception: see the module docstring."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return RunState(path=path, missing=True)
    except OSError as exc:
        return RunState(path=path, problems=[StateError(path, f"it cannot be read ({exc.strerror}); {FIX}")])
    try:
        return parse_state(data, path)
    except StateError as exc:
        return RunState(path=path, problems=[exc])


def read_stop_reason(path: str | os.PathLike) -> str | None:
    """The reason a stop request (``stop_request``) gives; None when there is no such file, or it names no
    reason (not a JSON object, no ``reason``, or one that is not a non-empty string)."""
    try:
        with open(path, "rb") as fh:
            fields = parse_object(fh.read(), path)
    except (OSError, StateError):
        return None
    reason = fields.get("reason")
    return reason if isinstance(reason, str) and reason else None
