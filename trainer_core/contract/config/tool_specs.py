"""The ``tools``, ``max_tool_calls`` and ``tool_timeout`` settings: which standalone functions the model may
call while it generates, how many rounds of calls an episode may take, and how long one call may run.

A tools entry names functions the way reward functions are named (one grammar, config/code_refs.py):
``FILE.py:fn`` or ``FILE.py:fn,fn2`` (a file, several functions of it), or a dotted import path ``pkg.module.fn``
(``pkg.module:fn,fn2``). They are checked here for their shape only, stdlib only, so a config is refused before
anything heavy loads; the trainer imports them and checks each function's docstring and type hints
(``trainer_core/agents/episodes.py``). docs/agents.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trainer_core.contract.config.checks import ConfigError, code_ref_list_problems
from trainer_core.contract.config.code_refs import CodeRef, parse_code_ref
from trainer_core.contract.run.json_values import is_number, is_whole


def parse_tool_spec(entry: str) -> CodeRef | None:
    """A tools entry read by the grammar every setting naming the user's functions shares (config/code_refs.py);
    None when it names no function."""
    return parse_code_ref(entry)


def tool_problems(tools: Any, max_tool_calls: Any, tool_timeout: Any = 0) -> Iterator[ConfigError]:
    yield from code_ref_list_problems(
        "tools",
        tools,
        "FILE.py:FUNCTION[,FUNCTION] or pkg.module.function",
        parse_tool_spec,
        "tools entry",
        "write FILE.py:FUNCTION (several: FILE.py:fn,fn2) or a dotted import path pkg.module.function.",
    )
    if max_tool_calls is not None and not is_whole(max_tool_calls, 1):
        yield ConfigError(
            "max_tool_calls",
            f"max_tool_calls must be a whole number of at least 1 (rounds of tool calls per episode), or null for "
            f"no limit; got {max_tool_calls!r}.",
        )
    if not is_number(tool_timeout) or tool_timeout < 0:
        yield ConfigError(
            "tool_timeout",
            f"tool_timeout must be a number of seconds, 0 or more (0: no limit), e.g. --tool-timeout 30; "
            f"got {tool_timeout!r}.",
        )
