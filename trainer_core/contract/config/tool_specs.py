"""The ``tools``, ``max_tool_calls`` and ``tool_timeout`` settings: which standalone functions the model may
call while it generates, how many rounds of calls an episode may take, and how long one call may run.

A tools entry names functions the way reward functions are named: ``FILE.py:fn`` or ``FILE.py:fn,fn2`` (a
file, several functions of it), or a dotted import path ``pkg.module.fn``. They are checked here for their
shape only, stdlib only, so a config is refused before anything heavy loads; the trainer imports them and
checks each function's docstring and type hints (``trainer_core/agents/episodes.py``). docs/agents.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from trainer_core.contract.config.checks import ConfigError


@dataclass(frozen=True)
class ToolSpec:
    """One tools entry: ``file`` (a .py path) or ``module`` (dotted), and the function names in it."""

    entry: str
    names: tuple[str, ...]
    file: str = ""
    module: str = ""


def parse_tool_spec(entry: str) -> ToolSpec | None:
    """``FILE.py:fn[,fn2…]`` or ``pkg.module.fn`` (or ``pkg.module:fn[,fn2…]``); None for anything else."""
    where, sep, names_text = entry.rpartition(":")
    if sep:
        names = tuple(n.strip() for n in names_text.split(","))
        if not names or not all(n.isidentifier() for n in names):
            return None
        if where.endswith(".py"):
            return ToolSpec(entry, names, file=where)
        if where and all(p.isidentifier() for p in where.split(".")):
            return ToolSpec(entry, names, module=where)
        return None
    module, _, name = entry.rpartition(".")
    if module and name.isidentifier() and all(p.isidentifier() for p in module.split(".")):
        return ToolSpec(entry, (name,), module=module)
    return None


def tool_problems(tools: Any, max_tool_calls: Any, tool_timeout: Any = 0) -> Iterator[ConfigError]:
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        yield ConfigError(
            "tools", f"tools must be a list of FILE.py:FUNCTION[,FUNCTION] or pkg.module.function, got {tools!r}."
        )
    else:
        for entry in tools:
            if parse_tool_spec(entry) is None:
                yield ConfigError(
                    "tools",
                    f"tools entry {entry!r} names no function: write FILE.py:FUNCTION (several: FILE.py:fn,fn2) or "
                    "a dotted import path pkg.module.function.",
                )
    if max_tool_calls is not None and (
        isinstance(max_tool_calls, bool) or not isinstance(max_tool_calls, int) or max_tool_calls < 1
    ):
        yield ConfigError(
            "max_tool_calls",
            f"max_tool_calls must be a whole number of at least 1 (rounds of tool calls per episode), or null for "
            f"no limit; got {max_tool_calls!r}.",
        )
    if (
        isinstance(tool_timeout, bool)
        or not isinstance(tool_timeout, (int, float))
        or not math.isfinite(tool_timeout)
        or tool_timeout < 0
    ):
        yield ConfigError(
            "tool_timeout",
            f"tool_timeout must be a number of seconds, 0 or more (0: no limit), e.g. --tool-timeout 30; "
            f"got {tool_timeout!r}.",
        )
