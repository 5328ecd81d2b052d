"""Reward functions of a dataset run: TRL's built-ins by name, dotted paths and FILE.py:FUNCTION, as TRL calls them.

A run without an environment class scores completions with plain TRL reward functions
(``f(prompts, completions, completion_ids, **columns) -> list[float | None]``), named the way ``trl grpo``
names them. Each is wrapped so that an exception or a value that is not a number stops the run with the
user's own traceback and the function's name (as ``score_episode`` does for an environment), and so that
once every function has scored a batch the scored samples are recorded with their weighted total and each
function's share: ``samples.jsonl`` and every viewer then read a dataset run like an environment run.
"""

from __future__ import annotations

import inspect
import math
import traceback
from collections.abc import Callable, Coroutine
from typing import Any, cast

from trainer_core.agents.episodes import episode_sample
from trainer_core.contract.config.checks import reward_func_kind
from trainer_core.environment.user_code import UserCodeError, load_function
from trainer_core.environment.user_env import completion_text

# what `trl grpo` passes for get_soft_overlong_punishment (trl/scripts/grpo.py)
SOFT_OVERLONG = {"max_completion_len": 1280, "soft_punish_cache": 256}
# TRL's built-ins read completion[0]["content"]: a text completion is handed to them as one assistant message
_MESSAGE_BUILTINS = ("accuracy_reward", "reasoning_accuracy_reward", "think_format_reward")
_NOT_COLUMNS = {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric", "environments"}
_PREVIEW = 200
REWARD_FIX = "Check reward_funcs (--reward-func): one of TRL's names, a dotted import path or FILE.py:FUNCTION."


def load_reward_function(spec: str) -> Callable:
    """The function a reward_funcs name stands for, found as `trl grpo` finds it."""
    kind = reward_func_kind(spec)
    if kind == "builtin":
        from trl import rewards

        if spec == "get_soft_overlong_punishment":
            # trl's public name: its lazy __init__ imports it under TYPE_CHECKING only, which pyright calls private
            return rewards.get_soft_overlong_punishment(**SOFT_OVERLONG)  # pyright: ignore[reportPrivateImportUsage]
        if spec in ("accuracy_reward", "reasoning_accuracy_reward"):
            from trl.import_utils import is_math_verify_available

            if not is_math_verify_available():
                raise UserCodeError(
                    f"reward function {spec} needs the math_verify package, which is not installed: "
                    "pip install 'grpo-tui[math]' (or math-verify)."
                )
        return getattr(rewards, spec)
    return load_function(spec, "reward function", REWARD_FIX)


def display_name(func: Callable) -> str:
    """The name TRL gives a reward function in its metrics (``rewards/<name>/mean``)."""
    import functools

    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__name__", type(func).__name__)


def as_messages(completions: list) -> list:
    return [[{"role": "assistant", "content": c}] if isinstance(c, str) else c for c in completions]


def _check_values(name: str, values, completions: list) -> list:
    try:
        values = list(values)
    except TypeError:
        raise UserCodeError(
            f"reward function {name} returned {values!r}; it must return a list with one float (or None) per "
            "completion."
        ) from None
    if len(values) != len(completions):
        raise UserCodeError(
            f"reward function {name} returned {len(values)} rewards for {len(completions)} completions; it must "
            "return one per completion."
        )
    for i, value in enumerate(values):
        ok = value is None or (
            isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isinf(value)
        )
        if not ok:
            text = completion_text(completions[i])[:_PREVIEW]
            raise UserCodeError(
                f"reward function {name} returned {value!r} ({type(value).__name__}); each reward must be a "
                f"finite float, or None to skip the completion.\n  completion starts: {text!r}",
                case={"completion_start": text, "score": repr(value)},
            )
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in values]


class RewardFunctions:
    """The run's reward functions, wrapped for TRL (``funcs``, ``weights``), sharing one sample recorder."""

    def __init__(
        self,
        specs: dict[str, float],
        on_samples: Callable[[list[dict], int | None], None] | None = None,
        *,
        tools: bool = False,
    ):
        """``tools``: the model calls tools in this run, so each completion is an episode of turns."""
        self.tools = tools
        self.names: list[str] = []
        self.weights = [float(w) for w in specs.values()]
        self.funcs = []
        for index, spec in enumerate(specs):
            func = load_reward_function(spec)
            name = display_name(func)
            if name in self.names:
                name = f"{name}_{index + 1}"
            self.names.append(name)
            self.funcs.append(self._wrap(index, name, func, spec in _MESSAGE_BUILTINS))
        self.on_samples = on_samples
        self._pending: dict[int, dict] = {}

    def _wrap(self, index: int, name: str, func: Callable, wants_messages: bool) -> Callable:
        def failed(exc: Exception, completions) -> UserCodeError:
            first = completion_text(completions[0])[:_PREVIEW] if completions else ""
            return UserCodeError(
                f"reward function {name} raised {type(exc).__name__}: {exc}\n  first completion starts: {first!r}",
                case={"completion_start": first},
                user_traceback=traceback.format_exc(),
            )

        def shown(completions):  # what the function is given: the built-ins that read messages get messages
            return as_messages(completions) if wants_messages else completions

        def done(values, prompts, completions, kwargs):
            values = _check_values(name, values, completions)
            self._collect(index, prompts, completions, values, kwargs)
            return values

        reward: Callable[..., Any]
        if inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__):

            async def async_reward(prompts, completions, **kwargs):  # TRL runs async reward functions concurrently
                try:
                    values = await func(prompts=prompts, completions=shown(completions), **kwargs)
                except Exception as exc:
                    raise failed(exc, completions) from exc
                return done(values, prompts, completions, kwargs)

            reward = async_reward
        else:

            def sync_reward(prompts, completions, **kwargs):
                try:
                    values = func(prompts=prompts, completions=shown(completions), **kwargs)
                except Exception as exc:
                    raise failed(exc, completions) from exc
                return done(values, prompts, completions, kwargs)

            reward = sync_reward

        reward.__name__ = name
        return reward

    def score(self, prompts: list, completions: list, **kwargs) -> list[dict[str, float | None]]:
        """Every function's reward for each completion, outside training (the reward inspection)."""
        per_func = []
        for func in self.funcs:
            values = func(prompts=prompts, completions=completions, **kwargs)
            if inspect.isawaitable(values):
                import asyncio

                values = asyncio.run(cast(Coroutine[Any, Any, Any], values))  # an async reward's coroutine
            per_func.append(values)
        return [{name: values[i] for name, values in zip(self.names, per_func)} for i in range(len(completions))]

    def total(self, rewards: dict[str, float | None]) -> float | None:
        """The weighted sum TRL trains on (a None is left out, as TRL's nansum does)."""
        pairs = ((w, rewards.get(n)) for n, w in zip(self.names, self.weights))
        given = [(w, v) for w, v in pairs if v is not None]
        return sum(w * v for w, v in given) if given else None

    def _collect(self, index: int, prompts, completions, values, kwargs) -> None:
        if self.on_samples is None:
            return
        batch = self._pending.setdefault(id(completions), {})
        batch[index] = values
        if len(batch) < len(self.funcs):
            return
        del self._pending[id(completions)]
        columns = {k: v for k, v in kwargs.items() if k not in _NOT_COLUMNS and isinstance(v, list)}
        samples = []
        for i, (prompt, completion) in enumerate(zip(prompts, completions)):
            rewards = {name: batch[j][i] for j, name in enumerate(self.names)}
            row = {k: v[i] for k, v in columns.items() if i < len(v)}
            if self.tools:  # an episode: its turns and tool calls, and its whole transcript as the text
                sample = episode_sample(prompt, completion, self.total(rewards), row)
            else:
                sample = {
                    "prompt": _prompt_preview(prompt),
                    "completion": completion_text(completion),
                    "reward": self.total(rewards),
                    "columns": row,
                }
            samples.append({**sample, "rewards": rewards})
        state = kwargs.get("trainer_state")
        self.on_samples(samples, getattr(state, "global_step", None))


def _prompt_preview(prompt) -> str:
    if isinstance(prompt, list):
        return "\n".join(f"{m.get('role')}: {m.get('content')}" for m in prompt if isinstance(m, dict))
    return str(prompt)
