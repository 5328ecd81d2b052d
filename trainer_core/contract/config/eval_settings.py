"""The held-out evaluation settings: where the held-out prompts come from, what is measured on them, how
often, and which checkpoints the ledger keeps (docs/evaluation.md).

Stdlib only, like config/checks.py: a bad value is refused before torch or TRL is imported. What needs the
user's code (does ``--eval-metric`` name a function, does ``--keep-best`` name a metric the run computes)
is checked by the trainer when it builds the held-out set, before the model loads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trainer_core.contract.config.checks import ConfigError, code_ref_list_problems, reward_func_kind
from trainer_core.contract.run.json_values import is_number, is_whole
from trainer_core.contract.run.ranking import KeepBest
from trainer_core.contract.run.ranking import parse_keep_best as read_keep_best


def parse_keep_best(value: Any) -> KeepBest | None:
    """``--keep-best`` as a KeepBest (run/ranking.py's reading), or a ConfigError naming the fix."""
    try:
        return read_keep_best(value)
    except ValueError as exc:
        raise ConfigError("keep_best", str(exc)) from None


def eval_metric_kind(name: str) -> str | None:
    """An --eval-metric names a function as a reward function is named: FILE.py:FUNCTION or a dotted path."""
    kind = reward_func_kind(name)
    return kind if kind in ("file", "dotted") else None


def eval_problems(c) -> Iterator[ConfigError]:
    """Every evaluation setting that cannot run, each naming the field, the value and the fix."""
    fraction = c.eval_fraction
    if fraction is not None and (not is_number(fraction) or not 0 < fraction < 1):
        yield ConfigError(
            "eval_fraction",
            f"eval_fraction must be a number in (0, 1), the share of the training prompts set aside as the held-out "
            f"set; got {fraction!r}. Example: --eval-fraction 0.1",
        )
    if c.eval_dataset and fraction is not None:
        yield ConfigError(
            "eval_fraction",
            f"the held-out set comes from --eval-dataset ({c.eval_dataset!r}) or from --eval-fraction ({fraction!r}) "
            "of the training prompts, not both: drop one.",
        )
    if c.eval_dataset is not None and (not isinstance(c.eval_dataset, str) or not c.eval_dataset.strip()):
        yield ConfigError("eval_dataset", f"eval_dataset must be a path or a dataset id, got {c.eval_dataset!r}.")
    if c.eval_split is not None and (not isinstance(c.eval_split, str) or not c.eval_split.strip()):
        yield ConfigError("eval_split", f"eval_split must be a split name such as test, got {c.eval_split!r}.")
    for name, low in (("eval_steps", 1), ("eval_max_prompts", 1), ("eval_generations", 1), ("eval_batch_size", 1)):
        value = getattr(c, name)
        if value is not None and not is_whole(value, low):
            yield ConfigError(name, f"{name} must be a whole number of at least {low}, got {value!r}.")
    if not is_number(c.eval_temperature) or c.eval_temperature <= 0:
        yield ConfigError(
            "eval_temperature",
            f"eval_temperature must be > 0 (0.6 is typical for pass@k), got {c.eval_temperature!r}.",
        )
    yield from code_ref_list_problems(
        "eval_metric",
        c.eval_metric,
        "FILE.py:FUNCTION or pkg.module.fn",
        eval_metric_kind,
        "eval_metric",
        "write FILE.py:FUNCTION or a dotted import path pkg.module.function (it is called as a reward function is).",
    )
    try:
        parse_keep_best(c.keep_best)
    except ConfigError as exc:
        yield exc
