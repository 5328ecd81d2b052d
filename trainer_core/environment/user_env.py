"""Environment modules: load the user's class, check it, and turn it into TRL reward functions.

The user writes ``score_episode(model, tokenizer, completion, **row_columns) -> float in [0, 1]``; TRL
wants batched ``f(prompts, completions, **columns) -> list[float]``. The adapter bridges the two, hands the
*live* model to every call, records scored samples, and refuses bad scores loudly: an exception, a NaN or a
value outside [0, 1] stops the run with the environment's own traceback and the case that caused it,
because a silently clamped reward trains the wrong thing cleanly. The class itself is imported by the one
loader of the user's code (user_code.py), as reward functions and tools are.
"""

from __future__ import annotations

import inspect
import math
import traceback
from collections.abc import Callable
from typing import Any

from trainer_core.environment.user_code import UserCodeError, load_class

REQUIRED_METHODS = ("build_dataset", "score_episode")
_COMPLETION_PREVIEW = 200
ENV_FIX = "Check --rl-env-module (rl_env_module in a config file): a .py file path or a dotted module path."


def load_environment(module: str, class_name: str, kwargs: dict | None = None):
    """Import ``module``, instantiate ``class_name(**kwargs)`` and check it has the required methods."""
    cls = load_class(module, class_name, ENV_FIX)
    missing = [m for m in REQUIRED_METHODS if not callable(getattr(cls, m, None))]
    if "score_episode" in missing and callable(getattr(cls, "get_reward", None)):
        missing.remove("score_episode")  # an agentic environment that scores its own episodes (agentic.py)
    if missing:
        raise UserCodeError(
            f"environment class {class_name} is missing {', '.join(missing)}. An environment needs "
            "build_dataset(tokenizer) and score_episode(model, tokenizer, completion, **row_columns) (an agentic one "
            "with get_tool_functions() may define get_reward(self) instead); get_tools() and get_reward_functions() "
            "are optional."
        )
    _check_config_keys(cls, class_name, kwargs or {})
    try:
        return cls(**(kwargs or {}))
    except Exception as exc:
        raise UserCodeError(
            f"{class_name}(**{kwargs or {}}) raised {type(exc).__name__}: {exc}. Check --rl-env-config.",
            user_traceback=traceback.format_exc(),
        ) from exc


def _check_config_keys(cls, class_name: str, kwargs: dict) -> None:
    """UserCodeError naming the ``rl_env_config`` keys that ``class_name.__init__`` does not take, with the ones it
    does, before it is called (a TypeError from the call would name neither the setting nor the fix)."""
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a C class): the call itself says
        return
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    takes = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [k for k in kwargs if k not in takes]
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        accepted = ", ".join(takes) if takes else "no settings"
        raise UserCodeError(
            f"rl_env_config sets {names}, which {class_name}.__init__ does not take (it takes: {accepted}). Fix: "
            f"remove {'it' if len(unknown) == 1 else 'them'} from --rl-env-config (rl_env_config in a config file), "
            f"or add a parameter of that name to {class_name}.__init__."
        )


def completion_text(completion: Any) -> str:
    """TRL passes plain strings or a list of chat messages; the environment always gets text."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(m.get("content") or "" for m in completion if isinstance(m, dict))
    return str(completion)


def prompt_text(prompt: Any, tokenizer) -> str:
    """A dataset prompt as the model sees it: chat messages through the chat template, text as it is."""
    if isinstance(prompt, list):
        return tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
    return prompt


def _prompt_preview(prompt: Any) -> str:
    if isinstance(prompt, list):
        return "\n".join(f"{m.get('role')}: {m.get('content')}" for m in prompt if isinstance(m, dict))
    return str(prompt)


class ScoreEpisodeReward:
    """TRL reward function over ``env.score_episode``. ``model`` is bound once the trainer exists."""

    __name__ = "score_episode"

    def __init__(self, env, tokenizer, on_samples: Callable[[list[dict], int | None], None] | None = None):
        self.env = env
        self.tokenizer = tokenizer
        self.model: Any = None  # the live model (transformers or PEFT), bound once the trainer exists
        self.on_samples = on_samples

    def __call__(self, prompts, completions, **kwargs) -> list[float]:
        columns = {k: v for k, v in kwargs.items() if k not in TRL_REWARD_KWARGS}
        scores, samples = [], []
        for i, (prompt, completion) in enumerate(zip(prompts, completions)):
            text = completion_text(completion)
            row = {k: v[i] for k, v in columns.items()}
            score = self._score_one(text, row)
            scores.append(score)
            samples.append({"prompt": _prompt_preview(prompt), "completion": text, "reward": score, "columns": row})
        if self.on_samples is not None:
            state = kwargs.get("trainer_state")
            self.on_samples(samples, getattr(state, "global_step", None))
        return scores

    def _score_one(self, text: str, row: dict) -> float:
        return checked_score(
            lambda: self.env.score_episode(model=self.model, tokenizer=self.tokenizer, completion=text, **row),
            "score_episode",
            text,
            row,
        )


def checked_score(score: Callable[[], Any], where: str, text: str, row: dict) -> float:
    """``score()``, which must give a finite float in [0, 1]: UserCodeError with the user's traceback and the case
    (the row's columns, the start of the completion) otherwise. ``where`` names the method in messages."""
    case = {"columns": row, "completion_start": text[:_COMPLETION_PREVIEW]}
    try:
        value = score()
    except Exception as exc:
        raise UserCodeError(
            f"{where} raised {type(exc).__name__}: {exc}\n  case columns: {row!r}\n"
            f"  completion starts: {text[:_COMPLETION_PREVIEW]!r}",
            case=case,
            user_traceback=traceback.format_exc(),
        ) from exc
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise UserCodeError(
            f"{where} returned {value!r} ({type(value).__name__}); it must return a float in [0, 1].\n"
            f"  case columns: {row!r}\n  completion starts: {text[:_COMPLETION_PREVIEW]!r}",
            case={**case, "score": repr(value)},
        ) from None
    if not math.isfinite(result) or not 0.0 <= result <= 1.0:
        raise UserCodeError(
            f"{where} returned {result!r}, outside [0, 1]; scores are never clamped. Fix the environment "
            f"so every score is a finite float in [0, 1].\n  case columns: {row!r}\n"
            f"  completion starts: {text[:_COMPLETION_PREVIEW]!r}",
            case={**case, "score": repr(result)},
        )
    return result


# what TRL passes a reward function besides the dataset's columns (prompts and completions are named arguments)
TRL_REWARD_KWARGS = frozenset(
    {"trainer_state", "log_extra", "log_metric", "environments", "completion_ids", "completion"}
)


def extra_reward_functions(env) -> tuple[list[Callable], list[float]]:
    """The environment's optional TRL-style reward functions and their weights."""
    getter = getattr(env, "get_reward_functions", None)
    if getter is None:
        return [], []
    funcs, weights = [], []
    for item in getter() or []:
        func, weight = item if isinstance(item, tuple) else (item, 1.0)
        if not callable(func):
            raise UserCodeError(f"get_reward_functions() returned {func!r}, which is not callable.")
        funcs.append(_guarded(func))
        weights.append(float(weight))
    return funcs, weights


def _guarded(func: Callable) -> Callable:
    """Wrap a user reward function so an exception carries the user's traceback and the batch case."""
    name = getattr(func, "__name__", type(func).__name__)

    def reward(prompts, completions, **kwargs):
        try:
            return func(prompts=prompts, completions=completions, **kwargs)
        except Exception as exc:
            first = completion_text(completions[0]) if completions else ""
            raise UserCodeError(
                f"reward function {name} raised {type(exc).__name__}: {exc}\n  first completion starts: {first[:_COMPLETION_PREVIEW]!r}",
                case={"completion_start": first[:_COMPLETION_PREVIEW]},
                user_traceback=traceback.format_exc(),
            ) from exc

    reward.__name__ = name
    return reward


def get_tools(env) -> list[dict] | None:
    getter = getattr(env, "get_tools", None)
    tools = getter() if getter else None
    return list(tools) if tools else None
