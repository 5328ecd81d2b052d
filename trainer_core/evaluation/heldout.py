"""The held-out set and what is measured on it: the prompts a run never trains on, and its task metrics.

The held-out prompts come from the environment (``build_eval_dataset(tokenizer)``), from a dataset
(``--eval-dataset``/``--eval-split``), or from the training data (``--eval-fraction``: a seeded share set
aside before training, its row numbers recorded in the run folder). They go through the training prompts'
own checks (a prompt column, not empty, ``max_prompt_length``), so a held-out prompt is one the model could
have trained on, and is not.

Metrics: the reward functions (each by its name, and ``reward``, their weighted total) and the task
metrics, which do not depend on the reward: an environment's ``eval_metrics(completion, **row) -> dict``,
or ``--eval-metric`` functions called as reward functions are. In an agentic run a completion is an
episode: the reward functions get its messages and ``environments`` (each episode's instance), as TRL gives
them; ``eval_metrics`` is called on the episode's own instance, after the episode, with the transcript.
Each value must be a finite number in [0, 1]; anything else stops the run with the user's traceback and
the case, as a bad score does.
Everything here is checked before the model loads (a probe call learns the environment's metric names).
"""

from __future__ import annotations

import json
import math
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainer_core.contract.config.eval_settings import parse_keep_best
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.environment.user_code import UserCodeError, call_user, load_function
from trainer_core.environment.user_env import TRL_REWARD_KWARGS, checked_score, completion_text

EVAL_ROWS_FILE = "eval_rows.json"
_PREVIEW = 200
METRIC_FIX = "Check eval_metric (--eval-metric): FILE.py:FUNCTION or pkg.module.function."
Scorer = Callable[[list, list, list[dict], Any], list[float]]


@dataclass
class HeldOut:
    """The held-out prompts (``rows``: the dataset's rows, ``prompt`` included), where they came from, and the
    functions that score a batch of completions: ``scorers`` maps a metric's name to
    ``f(prompts, completions, rows, environments) -> list[float]`` (``environments``: each episode's instance in
    an agentic run, else None); ``task`` names the task metrics among them. ``agentic``: the model calls tools,
    so each completion is an episode played by the trainer's tool loop."""

    rows: list[dict]
    source: str
    scorers: dict[str, Scorer] = field(default_factory=dict)
    task: list[str] = field(default_factory=list)
    agentic: bool = False


def split_off(dataset, config: RunConfig, run_dir=None):
    """(training rows, held-out rows) with ``eval_fraction`` of the rows held out, chosen with the run's seed.
    The held-out row numbers are written to ``RUN/eval_rows.json`` so the split can be checked later."""
    fraction = config.eval_fraction
    assert fraction is not None
    total = len(dataset)
    count = max(1, round(total * fraction))
    if count >= total:
        raise ConfigError(
            "eval_fraction",
            f"eval_fraction {fraction} of {total} prompts leaves none to train on; lower it or use more prompts.",
        )
    held = sorted(random.Random(config.seed).sample(range(total), count))
    chosen = set(held)
    if run_dir is not None:
        record = {"fraction": fraction, "seed": config.seed, "rows": total, "held_out": held}
        (run_dir / EVAL_ROWS_FILE).write_text(json.dumps(record) + "\n")
    return dataset.select([i for i in range(total) if i not in chosen]), dataset.select(held)


def environment_eval_dataset(env: Any, tokenizer):
    """The environment's ``build_eval_dataset(tokenizer)``, or None when it has none or returns None (a held-out
    set the environment's config leaves off); a raise carries the user's traceback."""
    build = getattr(env, "build_eval_dataset", None)
    if not callable(build):
        return None
    return call_user("build_eval_dataset", build, tokenizer)


def _check_values(name: str, values: Any, count: int, completions: list, rows: list[dict]) -> list[float]:
    try:
        values = list(values)
    except TypeError:
        raise UserCodeError(
            f"eval metric {name} returned {values!r}; it must return a list with one number in [0, 1] per completion."
        ) from None
    if len(values) != count:
        raise UserCodeError(
            f"eval metric {name} returned {len(values)} values for {count} completions; return one each."
        )
    out = []
    for i, value in enumerate(values):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not 0 <= value <= 1
        ):
            text = completion_text(completions[i])[:_PREVIEW]
            raise UserCodeError(
                f"eval metric {name} returned {value!r} ({type(value).__name__}); each value must be a number in "
                f"[0, 1].\n  case columns: {rows[i]!r}\n  completion starts: {text!r}",
                case={"columns": rows[i], "completion_start": text, "score": repr(value)},
            )
        out.append(float(value))
    return out


def _columns(rows: list[dict]) -> dict[str, list]:
    names = [k for k in (rows[0] if rows else {}) if k != "prompt" and k not in TRL_REWARD_KWARGS]
    return {k: [r.get(k) for r in rows] for k in names}


class _LastBatch:
    """The metrics of the batch of completions scored last: each metric's scorer asks for its own column of one
    table computed once per batch. The batch is known by identity and kept alive, so a later batch can never take
    its place by reusing its ``id`` (a freed list's id is often the next list's)."""

    def __init__(self):
        self.batch: object = None
        self.table: dict[str, list[float]] = {}

    def holds(self, batch: object) -> bool:
        return self.batch is batch

    def keep(self, batch: object, table: dict[str, list[float]]) -> None:
        self.batch, self.table = batch, table


def function_scorer(name: str, func: Callable):
    """A function with a reward function's signature, as a metric scorer."""

    def score(prompts, completions, rows, environments=None):
        given = {} if environments is None else {"environments": environments}
        try:
            values = func(prompts=prompts, completions=completions, **given, **_columns(rows))
        except Exception as exc:
            first = completion_text(completions[0])[:_PREVIEW] if completions else ""
            raise UserCodeError(
                f"eval metric {name} raised {type(exc).__name__}: {exc}\n  first completion starts: {first!r}",
                case={"completion_start": first},
                user_traceback=traceback.format_exc(),
            ) from exc
        return _check_values(name, values, len(completions), completions, rows)

    return score


def env_metric_names(env, row: dict, factory: Callable | None = None) -> list[str]:
    """The names ``eval_metrics`` returns, learnt from one call on an empty completion (before the model
    loads), with its return checked: a mapping of names to numbers. ``factory``: an agentic run's
    environment_factory; the call is made on a rollout's instance reset with ``row``, as an episode's is."""
    if factory is not None:
        rollout = factory()
        rollout.reset(**row)
        env = rollout.env
    try:
        probe = env.eval_metrics(completion="", **{k: v for k, v in row.items() if k != "prompt"})
    except Exception as exc:
        raise UserCodeError(
            f"eval_metrics raised {type(exc).__name__}: {exc} (called on an empty completion to learn the metric "
            f"names)\n  case columns: {row!r}",
            user_traceback=traceback.format_exc(),
        ) from exc
    if not isinstance(probe, dict) or not probe or not all(isinstance(k, str) for k in probe):
        raise UserCodeError(
            f"eval_metrics returned {probe!r} ({type(probe).__name__}); it must return a dict of metric names to "
            "numbers in [0, 1], e.g. {'answer_correct': 1.0}."
        )
    return list(probe)


def env_scorers(env, names: list[str], agentic: bool = False) -> dict[str, Scorer]:
    """One scorer per name of the environment's ``eval_metrics``; a call computes them all once per batch.
    ``agentic``: each completion is an episode, scored on its transcript by its own instance when it has one."""
    from trainer_core.agents.episodes import EpisodeEnvironment, transcript_text

    cache = _LastBatch()

    def all_of(prompts, completions, rows, environments=None):
        if not cache.holds(completions):
            table: dict[str, list[float]] = {n: [] for n in names}
            for i, (completion, row) in enumerate(zip(completions, rows)):
                text = transcript_text(completion) if agentic else completion_text(completion)
                columns = {k: v for k, v in row.items() if k != "prompt"}
                rollout = environments[i] if environments else None
                owner = rollout.env if isinstance(rollout, EpisodeEnvironment) else env
                result = _call_env_metrics(owner, text, columns)
                for n in names:
                    if n not in result:
                        raise UserCodeError(
                            f"eval_metrics returned no '{n}' for one completion (it returned {sorted(result)}); "
                            f"return the same names every time.\n  case columns: {columns!r}\n  completion starts: {text[:_PREVIEW]!r}",
                            case={"columns": columns, "completion_start": text[:_PREVIEW]},
                        )
                    table[n].append(
                        checked_score(lambda n=n, got=result: got[n], f"eval_metrics['{n}']", text, columns)
                    )
            cache.keep(completions, table)
        return cache.table

    return {n: (lambda p, c, r, e=None, n=n: all_of(p, c, r, e)[n]) for n in names}


def _call_env_metrics(env, text: str, columns: dict) -> dict:
    try:
        result = env.eval_metrics(completion=text, **columns)
    except Exception as exc:
        raise UserCodeError(
            f"eval_metrics raised {type(exc).__name__}: {exc}\n  case columns: {columns!r}\n"
            f"  completion starts: {text[:_PREVIEW]!r}",
            case={"columns": columns, "completion_start": text[:_PREVIEW]},
            user_traceback=traceback.format_exc(),
        ) from exc
    if not isinstance(result, dict):
        raise UserCodeError(
            f"eval_metrics returned {result!r} ({type(result).__name__}); it must return a dict of numbers."
        )
    return result


def reward_scorers(funcs: list, weights: list[float] | None) -> dict[str, Scorer]:
    """The reward functions as metrics, each by its name, and ``reward``: their weighted total, as TRL sums it."""
    from types import SimpleNamespace

    state = SimpleNamespace(global_step=0, max_steps=0, epoch=0.0)
    weights = weights or [1.0] * len(funcs)
    names = [getattr(f, "__name__", f"reward_{i}") for i, f in enumerate(funcs)]
    cache = _LastBatch()

    def ignore(*args, **kwargs):
        return None

    def all_of(prompts, completions, rows, environments=None):
        if not cache.holds(completions):
            table: dict[str, list[float]] = {}
            given = {} if environments is None else {"environments": environments}
            for name, func in zip(names, funcs):
                values = func(
                    prompts=prompts,
                    completions=completions,
                    trainer_state=state,
                    log_extra=ignore,
                    log_metric=ignore,
                    **given,
                    **_columns(rows),
                )
                table[name] = [math.nan if v is None else float(v) for v in values]
            table["reward"] = [
                math.fsum(w * table[n][i] for n, w in zip(names, weights) if not math.isnan(table[n][i]))
                for i in range(len(completions))
            ]
            cache.keep(completions, table)
        return cache.table

    if len(names) == 1:
        return {"reward": lambda p, c, r, e=None: all_of(p, c, r, e)[names[0]]}
    return {n: (lambda p, c, r, e=None, n=n: all_of(p, c, r, e)[n]) for n in ["reward", *names]}


def task_scorers(
    config: RunConfig, env: Any, first_row: dict, *, agentic: bool = False, factory: Callable | None = None
) -> dict[str, Scorer]:
    """The task metrics: ``--eval-metric`` functions, and an environment's ``eval_metrics``. ``agentic``: each
    completion is an episode; ``factory``: the run's environment_factory, whose instances play them."""
    from trainer_core.rewards.reward_funcs import display_name

    scorers: dict[str, Scorer] = {}
    for spec in config.eval_metric:
        try:
            func = load_function(spec, "eval_metric", METRIC_FIX)
        except UserCodeError as exc:
            raise ConfigError("eval_metric", str(exc)) from None
        scorer = function_scorer(display_name(func), func)
        prompt = first_row["prompt"]
        scorer([prompt], [[{"role": "assistant", "content": ""}] if isinstance(prompt, list) else ""], [first_row])
        scorers[display_name(func)] = scorer  # called once above on an empty completion: its return is checked now
    if env is not None and callable(getattr(env, "eval_metrics", None)):
        names = env_metric_names(env, first_row, factory)
        for name, scorer in env_scorers(env, names, agentic).items():
            scorers.setdefault(name, scorer)
    return scorers


def check_keep_best(config: RunConfig, metrics: list[str]) -> None:
    """``--keep-best`` must name a metric this run computes (its mean, or ``NAME/pass@K``)."""
    keep = parse_keep_best(config.keep_best)
    if keep is None:
        return
    name = keep.metric.rpartition("/")[0] if keep.metric not in metrics and "/" in keep.metric else keep.metric
    if name not in metrics:
        raise ConfigError(
            "keep_best",
            f"keep_best names metric '{keep.metric}', which this run does not compute; its held-out metrics are "
            f"{', '.join(metrics)} (each also as NAME/pass@{config.eval_generations}).",
        )
