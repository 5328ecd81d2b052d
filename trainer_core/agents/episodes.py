"""Agentic runs: tools that TRL calls while the model generates, and the episodes they make.

An environment class becomes agentic by returning its tool methods from ``get_tool_functions()``; a run
may also name standalone functions (``tools``: ``FILE.py:fn,fn2``). TRL's ``GRPOTrainer`` then runs the
loop: the model writes a tool call, TRL calls the function with the parsed arguments, the result goes back
as a ``tool`` turn and the model writes its next turn, up to ``max_tool_calling_iterations``.

TRL wants an ``environment_factory`` (called with no arguments, one instance per rollout) whose every public
method is a tool. A user's class has other public methods (``build_dataset``, ``score_episode``…), so each
rollout gets an :class:`EpisodeEnvironment`: a class made for the user's class that holds a fresh instance
built with ``rl_env_config`` and exposes only its tool methods (same names, signatures, docstrings) and
``reset``. The reward is the instance's ``get_reward()`` when it has one, else ``score_episode`` on the whole
transcript as text (:func:`transcript_text`); either is checked as ``score_episode`` is. Each scored episode
is recorded with its turns (:func:`episode_turns`), which samples.jsonl keeps and the Completions tab shows.

Everything here is checked before the model loads: the chat template must render a tool-calling
conversation and the tokenizer must parse one back; every tool needs type hints and a Google-style
docstring; an environment with tools needs ``reset``. docs/agents.md.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import inspect
import json
import threading
import traceback
from collections.abc import Callable
from typing import Any

from trainer_core.contract.config.tool_specs import parse_tool_spec
from trainer_core.environment.user_code import UserCodeError, load_functions
from trainer_core.environment.user_env import TRL_REWARD_KWARGS, ScoreEpisodeReward, _prompt_preview, checked_score

MAX_TURNS = 40  # turns kept per episode in samples.jsonl
MAX_TURN_CHARS = 2000  # characters kept of a turn's text, a call's arguments or a tool's result
_NOT_COLUMNS = {"prompt", "completion", "completion_ids", "environment"}
TOOLS_FIX = "Check tools (--tools): FILE.py:FUNCTION[,FUNCTION] or pkg.module.function."


def tool_functions(env) -> list[Callable]:
    """The environment's ``get_tool_functions()``, checked: [] for an environment without it."""
    getter = getattr(env, "get_tool_functions", None)
    if getter is None:
        return []
    name = type(env).__name__
    try:
        funcs = list(getter() or [])
    except Exception as exc:
        raise UserCodeError(
            f"{name}.get_tool_functions() raised {type(exc).__name__}: {exc}", user_traceback=traceback.format_exc()
        ) from exc
    for func in funcs:
        if not callable(func):
            raise UserCodeError(
                f"{name}.get_tool_functions() returned {func!r}, which is not callable: return the bound methods "
                "that are tools, e.g. [self.check_availability, self.book_room]."
            )
    if funcs and not callable(getattr(type(env), "reset", None)):
        raise UserCodeError(
            f"{name} has tool functions but no reset method: each episode starts with reset(self, **row), given the "
            "row's columns (as score_episode gets them), which sets up the state the tools work on and may return "
            f"a string to append to the prompt. Add def reset(self, **row) -> str | None to {name}."
        )
    for func in funcs:
        check_tool(func, name)
    return funcs


def check_tool(func: Callable, owner: str = "") -> None:
    """A tool TRL can describe to the model: type hints and a Google-style docstring (transformers'
    ``get_json_schema`` reads both); UserCodeError naming the function and the fix otherwise."""
    from transformers.utils.chat_template_utils import get_json_schema

    name = getattr(func, "__name__", repr(func))
    where = f"{owner}.{name}" if owner else name
    example = (
        f'def {name}(self, room: str) -> str:\n    """Say what one night costs.\n\n    Args:\n'
        '        room: The room type.\n    """'
    )
    # its own docstring: inspect.getdoc would take a parent class's, which the rollout's copy of the tool lacks
    if not (getattr(func, "__doc__", None) or "").strip():
        raise UserCodeError(
            f"tool {where} has no docstring: the model is told what a tool does and what its arguments mean from its "
            f"Google-style docstring. Add a summary line and an Args: section with a line per argument, e.g.\n"
            f"{example}"
        )
    try:
        get_json_schema(func)
    except Exception as exc:  # TypeHintParsingException, DocstringParsingException
        raise UserCodeError(
            f"tool {where} cannot be described to the model: {exc} Every argument needs a type hint and a line in "
            f"the docstring's Args: section, e.g.\n{example}"
        ) from None


def load_tools(entries: list[str]) -> list[Callable]:
    """The standalone functions of ``tools`` (``FILE.py:fn,fn2`` or ``pkg.module.fn``), each checked."""
    funcs = []
    for entry in entries:
        spec = parse_tool_spec(entry)
        if spec is None:  # RunConfig.validate refuses it first
            raise UserCodeError(f"tools entry {entry!r} names no function. {TOOLS_FIX}")
        for func in load_functions(spec, "tools entry", TOOLS_FIX):
            check_tool(func)
            funcs.append(func)
    return funcs


def check_tool_calling(tokenizer, model: str) -> None:
    """The chat template renders a whole tool-calling conversation and the tokenizer can parse a generated one
    back into tool calls, as TRL's loop needs; UserCodeError saying which is missing otherwise."""
    import copy

    from trl.chat_template_utils import add_response_schema, supports_tool_calling

    if not supports_tool_calling(tokenizer):
        raise UserCodeError(
            f"the chat template of {model} cannot render a tool-calling conversation (user, assistant with "
            "tool_calls, tool), which tools need: the model would never see a tool's answer. Use a model whose chat "
            "template renders tools and tool calls (Qwen3, Llama 3.1 and newer, ...), or set such a template on its "
            "tokenizer (tokenizer.chat_template) and save it with the model."
        )
    probe = copy.copy(tokenizer)
    if getattr(probe, "response_template", None) is None and getattr(probe, "response_schema", None) is None:
        add_response_schema(probe)
    if getattr(probe, "response_template", None) is None and getattr(probe, "response_schema", None) is None:
        raise UserCodeError(
            f"the tokenizer of {model} has no response parser: TRL cannot read the tool calls out of what the model "
            "writes. Set tokenizer.response_template (transformers' response parsing) for its chat template and save "
            "it with the model, or use a model TRL knows (Qwen3, Llama 3.1 and newer, ...)."
        )


class ToolTimeout(Exception):
    """A tool call that ran past ``tool_timeout``: TRL counts it as a failed call, with this as its error."""


def _timeout_message(name: str, seconds: float) -> str:
    """Short: the model reads it as the tool's answer, and it takes room from the completion's tokens."""
    return f"{name} timed out after {seconds:g} s"


def call_with_timeout(func: Callable, args: tuple, kwargs: dict, seconds: float, name: str) -> Any:
    """``func(*args, **kwargs)``, or ToolTimeout once ``seconds`` pass (0: wait for it). The call runs in a
    thread of its own, which is left to finish by itself (a thread cannot be killed): its result is dropped."""
    if not seconds:
        return func(*args, **kwargs)
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = func(*args, **kwargs)
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name=f"tool {name}", daemon=True).start()
    if not done.wait(seconds):
        raise ToolTimeout(_timeout_message(name, seconds))
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


async def await_with_timeout(coro, seconds: float, name: str) -> Any:
    """``await coro``, or ToolTimeout (the coroutine cancelled) once ``seconds`` pass (0: wait for it)."""
    if not seconds:
        return await coro
    try:
        return await asyncio.wait_for(coro, seconds)
    except asyncio.TimeoutError:
        raise ToolTimeout(_timeout_message(name, seconds)) from None


def timed(func: Callable, seconds: float) -> Callable:
    """``func`` as TRL should call it: bounded by ``seconds`` (0: as it is). Keeps its name, signature and
    docstring, which describe it to the model, and whether it is a coroutine function (TRL awaits those)."""
    if not seconds:
        return func
    name = getattr(func, "__name__", "tool")
    if inspect.iscoroutinefunction(func):

        async def waited(*args, **kwargs):
            return await await_with_timeout(func(*args, **kwargs), seconds, name)

        return functools.update_wrapper(waited, func)

    def bounded(*args, **kwargs):
        return call_with_timeout(func, args, kwargs, seconds, name)

    return functools.update_wrapper(bounded, func)


def _method_call(name: str, original: Callable, seconds: float) -> Callable:
    if inspect.iscoroutinefunction(original):

        async def waited(self, *args, **kwargs):
            return await await_with_timeout(getattr(self.env, name)(*args, **kwargs), seconds, name)

        return functools.update_wrapper(waited, original)

    def call(self, *args, **kwargs):
        return call_with_timeout(getattr(self.env, name), args, kwargs, seconds, name)

    return functools.update_wrapper(call, original)


def _columns(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in _NOT_COLUMNS}


class EpisodeEnvironment:
    """Base of the per-rollout classes that :func:`environment_factory` makes: ``env`` is the user's instance."""

    tool_names: tuple[str, ...] = ()

    def __init__(self, env):
        self.env = env

    def _close(self) -> None:  # private: TRL takes every public method of a rollout for a tool
        """The user's instance's ``close()``, if it has one: the run is over for this rollout's instance."""
        closer = getattr(self.env, "close", None)
        if callable(closer):
            closer()

    def reset(self, **row):
        columns = _columns(row)
        try:
            observation = self.env.reset(**columns)
        except Exception as exc:
            raise UserCodeError(
                f"{type(self.env).__name__}.reset raised {type(exc).__name__}: {exc}\n  case columns: {columns!r}",
                case={"columns": columns},
                user_traceback=traceback.format_exc(),
            ) from exc
        if observation is not None and not isinstance(observation, str):
            raise UserCodeError(
                f"{type(self.env).__name__}.reset returned {observation!r} ({type(observation).__name__}); it must "
                "return None, or a string to append to the prompt.",
                case={"columns": columns},
            )
        return observation


class EpisodeFactory:
    """TRL's ``environment_factory`` for the user's environment (see ``environment_factory``), which keeps the
    instances it made so that ``close()`` reaches each one when the run ends."""

    def __init__(self, episode_cls: type[EpisodeEnvironment], cls: type, config: dict | None):
        self.episode_cls, self.cls, self.config = episode_cls, cls, config or {}
        self.instances: list[EpisodeEnvironment] = []

    def __call__(self) -> EpisodeEnvironment:
        try:
            made = self.episode_cls(self.cls(**self.config))
        except Exception as exc:
            raise UserCodeError(
                f"{self.cls.__name__}(**{self.config}) raised {type(exc).__name__}: {exc}. Check --rl-env-config.",
                user_traceback=traceback.format_exc(),
            ) from exc
        self.instances.append(made)
        return made

    def close(self) -> list[str]:
        """Call ``close()`` on every instance made (once); what raised, one line each (never raises: the run's
        outcome is decided already)."""
        problems = []
        instances, self.instances = self.instances, []
        for instance in instances:
            try:
                instance._close()
            except Exception as exc:
                problems.append(f"{self.cls.__name__}.close() raised {type(exc).__name__}: {exc}")
        return problems


def environment_factory(env, config: dict | None, tool_timeout: float = 0) -> EpisodeFactory:
    """TRL's ``environment_factory`` for the user's environment ``env`` (already checked by tool_functions):
    each call builds ``type(env)(**config)`` inside a class whose only public methods are its tools (each
    call bounded by ``tool_timeout`` seconds) and reset."""
    cls = type(env)
    names = [f.__name__ for f in tool_functions(env) if getattr(f, "__self__", None) is env]
    namespace: dict[str, Any] = {
        "__doc__": f"One rollout of {cls.__name__}: its tools ({', '.join(names)}) and reset.",
        "__module__": __name__,
        "tool_names": tuple(names),
    }
    for name in names:
        namespace[name] = _method_call(name, getattr(cls, name), tool_timeout)
    return EpisodeFactory(type(cls.__name__, (EpisodeEnvironment,), namespace), cls, config)


def standalone(env, funcs: list[Callable], tool_timeout: float = 0) -> list[Callable]:
    """The functions of ``get_tool_functions()`` that are not ``env``'s own methods: shared by every rollout,
    each call bounded by ``tool_timeout`` seconds."""
    return [timed(f, tool_timeout) for f in funcs if getattr(f, "__self__", None) is not env]


def play_episode(model, tokenizer, prompt: list[dict], tools: list[Callable], config) -> list[dict]:
    """One episode outside TRL (the reward inspection), played as TRL's loop plays it: generate, parse the
    tool calls, call each tool (an exception becomes ``{'error': …}``), give back the results, generate again,
    up to ``config.max_tool_calls`` rounds and ``config.rl_max_new_tokens`` generated tokens. Returns the
    episode's messages after the prompt."""
    import torch
    from trl.chat_template_utils import parse_response

    by_name = {getattr(t, "__name__", ""): t for t in tools}
    schemas: list[dict | Callable] | None = list(tools) or None
    completion: list[dict] = []
    budget, rounds = config.rl_max_new_tokens, 0
    while budget > 0:
        text = tokenizer.apply_chat_template(
            prompt + completion, tools=schemas, add_generation_prompt=True, tokenize=False
        )
        inputs = tokenizer(text, return_tensors="pt", add_special_tokens=False).to(model.device)
        with torch.no_grad():
            out = model.generate(
                **inputs,
                do_sample=True,
                temperature=config.rl_temperature,
                top_p=config.rl_top_p,
                top_k=config.rl_top_k or None,
                max_new_tokens=budget,
                pad_token_id=tokenizer.pad_token_id,
            )
        new = out[0, inputs["input_ids"].shape[1] :].tolist()
        budget -= len(new)
        message = parse_response(tokenizer, new, prefix=inputs["input_ids"][0].tolist(), tools=schemas)
        completion.append(message)
        calls = message.get("tool_calls") or []
        if not calls or (config.max_tool_calls is not None and rounds >= config.max_tool_calls):
            break
        rounds += 1
        for call in calls:
            function = call.get("function", {}) if isinstance(call, dict) else {}
            name = str(function.get("name", "?"))
            try:
                if name not in by_name:
                    raise ValueError(f"Tool {name} not found.")
                result: Any = by_name[name](**(function.get("arguments") or {}))
            except Exception as exc:
                result = {"error": str(exc)}
            completion.append({"role": "tool", "name": name, "content": str(result)})
    return completion


def rollout_tools(rollout: EpisodeEnvironment | None, shared: list[Callable]) -> list[Callable]:
    """The tools one rollout may call, as TRL collects them: the shared ones and the rollout's own methods."""
    own = [] if rollout is None else [getattr(rollout, n) for n in rollout.tool_names]
    return [*shared, *own]


# -- episodes ---------------------------------------------------------------------------------------------------


def _cut(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str) and len(value) > MAX_TURN_CHARS:
        return value[:MAX_TURN_CHARS] + "…", True
    if not isinstance(value, (str, int, float, bool, type(None))):
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            text = repr(value)
        if len(text) > MAX_TURN_CHARS:
            return text[:MAX_TURN_CHARS] + "…", True
    return value, False


def _failure(content: Any) -> str | None:
    """TRL writes a tool that raised as the text of ``{'error': message}``; the message, or None."""
    if isinstance(content, dict):
        return str(content["error"]) if set(content) == {"error"} else None
    if not isinstance(content, str) or not content.startswith("{'error'"):
        return None
    try:
        value = ast.literal_eval(content)
    except (ValueError, SyntaxError):
        return None
    return str(value["error"]) if isinstance(value, dict) and set(value) == {"error"} else None


def episode_turns(completion: Any) -> tuple[list[dict], bool, bool]:
    """(turns, cut, at_turn_limit) of a generated episode, TRL's list of messages: a turn for each piece of
    the model's text, one for each tool call with its ``arguments`` and its ``result`` or ``error`` (or
    ``unanswered``: no result came back, the episode ended there).
    ``at_turn_limit``: the episode ends on tool calls that were never run (the round limit, or no room left
    under max_completion_length)."""
    if not isinstance(completion, list):
        return [], False, False
    turns: list[dict] = []
    pending: list[dict] = []
    cut = False
    for message in completion:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role", "?"))
        content = message.get("content")
        if role == "tool":
            name = message.get("name")
            call = next((c for c in pending if c["tool"] == name), pending[0] if pending else None)
            if call is None:
                call = {"role": "assistant", "content": "", "tool": str(name)}
                turns.append(call)
            else:
                pending.remove(call)
            error = _failure(content)
            value, was_cut = _cut(error if error is not None else content)
            call["error" if error is not None else "result"] = value
            cut |= was_cut
            continue
        if (isinstance(content, str) and content.strip()) or role != "assistant":
            text, was_cut = _cut(content if isinstance(content, str) else str(content or ""))
            turns.append({"role": role, "content": text})
            cut |= was_cut
        for raw in message.get("tool_calls") or []:
            function = raw.get("function", raw) if isinstance(raw, dict) else {}
            arguments, was_cut = _cut(function.get("arguments", {}))
            call = {"role": "assistant", "content": "", "tool": str(function.get("name", "?")), "arguments": arguments}
            turns.append(call)
            pending.append(call)
            cut |= was_cut
    for call in pending:  # the turn limit (never run) or the length limit (its result dropped)
        call["unanswered"] = True
    at_limit = bool(pending)
    if len(turns) > MAX_TURNS:
        turns, cut = turns[:MAX_TURNS], True
    return turns, cut, at_limit


def transcript_text(completion: Any) -> str:
    """An episode as the text ``score_episode`` gets: the model's turns, each tool call as ``name(arguments)``
    and each tool's answer, a line each."""
    if not isinstance(completion, list):
        return str(completion)
    lines = []
    for message in completion:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if message.get("role") == "tool":
            lines.append(f"[{message.get('name', 'tool')}] {content}")
            continue
        if isinstance(content, str) and content:
            lines.append(content)
        for raw in message.get("tool_calls") or []:
            function = raw.get("function", raw) if isinstance(raw, dict) else {}
            arguments = function.get("arguments", {})
            shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            lines.append(f"{function.get('name', '?')}({shown})")
    return "\n".join(lines)


def episode_sample(prompt, completion, reward: float | None, row: dict) -> dict:
    """A scored episode as samples.jsonl keeps it."""
    turns, cut, at_limit = episode_turns(completion)
    sample = {"prompt": _prompt_preview(prompt), "completion": transcript_text(completion), "reward": reward}
    sample["columns"] = row
    sample["turns"] = turns
    if cut:
        sample["turns_cut"] = True
    if at_limit:
        sample["turn_limit"] = True
    return sample


class EpisodeReward(ScoreEpisodeReward):
    """The reward of an agentic environment's episodes: ``get_reward()`` of the rollout's own instance when
    its class defines one, else ``score_episode`` on the transcript; every score checked, every episode
    recorded with its turns."""

    def __init__(self, env, tokenizer, on_samples=None):
        super().__init__(env, tokenizer, on_samples)
        self.owns_reward = callable(getattr(type(env), "get_reward", None))
        self.__name__ = "get_reward" if self.owns_reward else "score_episode"

    def __call__(self, prompts, completions, **kwargs) -> list[float]:
        environments = kwargs.get("environments") or [None] * len(prompts)
        columns = {k: v for k, v in kwargs.items() if k not in TRL_REWARD_KWARGS}
        scores, samples = [], []
        for i, (prompt, completion, rollout) in enumerate(zip(prompts, completions, environments)):
            row = {k: v[i] for k, v in columns.items()}
            if self.owns_reward and isinstance(rollout, EpisodeEnvironment):
                score = self._get_reward(rollout.env, completion, row)
            else:
                score = self._score_one(transcript_text(completion), row)
            scores.append(score)
            samples.append(episode_sample(prompt, completion, score, row))
        if self.on_samples is not None:
            state = kwargs.get("trainer_state")
            self.on_samples(samples, getattr(state, "global_step", None))
        return scores

    def _get_reward(self, env, completion, row: dict) -> float:
        return checked_score(env.get_reward, f"{type(env).__name__}.get_reward", transcript_text(completion), row)
