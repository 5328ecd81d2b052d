"""The settings a resume may change (``--resume RUN --set KEY=VALUE``, ``grpo-tui rollback``), and why the rest may not.

A resumed leg restores the checkpoint's weights, optimizer, scheduler, sampler and RNG states, and goes on in
the same run folder. A setting may change there only if the restored state stays meaningful under it and the
history before it stays comparable: the step size and its safety rails (learning rate, KL coefficient, clip
ranges, temperature, gradient clipping), how the run is watched (health thresholds, stop_on, remedies) and how
often it saves, evaluates and logs. Anything that changes the model, the data, the batch or the optimizer's
shape would make the checkpoint's state belong to another run: those are refused, each with its reason.

``apply_sets`` turns the ``KEY=VALUE`` words into a new RunConfig and the change record
(``{SETTING: {"from": OLD, "to": NEW}}``) that config.yaml's revision, the leg's ``run_started`` and its
``rewound`` event keep; the values are judged by RunConfig's own checks. Nothing here writes.
"""

from __future__ import annotations

import copy
import difflib
import math
from typing import TYPE_CHECKING, Any

from trainer_core.contract.config.checks import ConfigError
from trainer_core.contract.run.json_values import is_flag

if TYPE_CHECKING:
    from trainer_core.contract.config.run_config import RunConfig

SAFE: dict[str, str] = {
    "lr": "the learning rate; the optimizer and the schedule go on from the checkpoint with it",
    "rl_kl_coef": "the KL coefficient (GRPOConfig.beta)",
    "rl_clip_range": "the clip range of the policy ratio (GRPOConfig.epsilon)",
    "rl_temperature": "the sampling temperature",
    "health": "the health rules' thresholds (health.KEY=VALUE changes one)",
    "stop_on": "the health rules that stop the run",
    "max_steps": "where the run ends",
    "save_steps": "how often a checkpoint is saved",
    "save_total_limit": "how many checkpoints are kept",
    "eval_steps": "how often the held-out set is evaluated",
    "logging_steps": "how often metrics are written",
    "samples_per_step": "how many scored completions are kept per step",
    "remedy": "the rules whose warning rolls the run back (remedy.RULE=rollback adds one)",
    "remedy_lr_scale": "the share of the learning rate a rollback keeps",
    "remedy_set": "the settings a rollback changes (remedy_set.KEY=VALUE adds one)",
    "max_remedies": "how many rollbacks a run may take",
    "remedy_severity": "the severity that takes a remedy",
    "remedy_keep_bad": "whether a rollback keeps a checkpoint of the bad state",
}
"""RunConfig fields a resume may change, with what each changes."""

TRAINER_ARGS: dict[str, str] = {
    "max_grad_norm": "the gradient-norm clipping (kept in grpo_args)",
    "epsilon_high": "the upper clip range of the policy ratio (kept in grpo_args)",
}
"""GRPOConfig fields, kept in RunConfig's ``grpo_args``, a resume may change."""

ALIASES: dict[str, str] = {
    "learning_rate": "lr",
    "beta": "rl_kl_coef",
    "kl_coef": "rl_kl_coef",
    "epsilon": "rl_clip_range",
    "clip_range": "rl_clip_range",
    "temperature": "rl_temperature",
}
"""Other names for the safe settings (TRL's and the usual ones)."""

MAPPINGS = ("health", "remedy", "remedy_set")
"""Safe settings that are mappings: ``KEY.SUB=VALUE`` changes one entry."""

_MODEL = "it changes the model the checkpoint's weights and optimizer state belong to"
_DATA = "it changes the task and data the run's history was measured on, and the sampler state the checkpoint keeps"
_BATCH = "it changes the batch the optimizer state and the sampler were built for"
_LENGTH = "it changes the sequences the steps so far were measured on"
_SETUP = "it changes how the run is placed and generated; start a new run for it"
REFUSED: dict[str, str] = {
    **dict.fromkeys(
        ("model", "peft", "lora_r", "lora_alpha", "lora_dropout", "target_modules", "trainer", "mixed_precision"),
        _MODEL,
    ),
    **dict.fromkeys(
        (
            "dataset",
            "dataset_config",
            "dataset_split",
            "prompt_column",
            "system_prompt",
            "reward_funcs",
            "rl_env_module",
            "rl_env_class",
            "rl_env_config",
            "tools",
            "max_tool_calls",
            "eval_dataset",
            "eval_split",
            "eval_fraction",
            "eval_metric",
            "epochs",
        ),
        _DATA,
    ),
    **dict.fromkeys(("rl_num_generations", "batch_size", "gradient_accumulation", "rl_loss_type"), _BATCH),
    **dict.fromkeys(("rl_max_new_tokens", "max_prompt_length", "rl_mask_truncated_completions"), _LENGTH),
    "scheduler": "the checkpoint's scheduler state belongs to its schedule; change lr to scale it instead",
    "warmup_ratio": "the checkpoint's scheduler state belongs to its warm-up; change lr to scale it instead",
    "seed": "the checkpoint restores its own random states; a new seed would not apply",
    "grpo_args": "it may change anything; only max_grad_norm and epsilon_high may change there (--set max_grad_norm=1.0)",
    "notify": "notify URLs are secrets kept in the run folder; give them with --notify to a new run",
}
"""Why each setting a resume may not change is refused (any other is refused as not safe)."""


def canonical(key: str) -> str:
    """``key`` with its alias resolved: ``learning_rate`` -> ``lr``; ``health.kl_high`` stays as it is."""
    head, dot, rest = key.partition(".")
    return ALIASES.get(head, head) + dot + rest


def why_unsafe(key: str) -> str | None:
    """Why a resume may not change setting ``key`` (an alias, a field, or ``MAPPING.KEY``); None when it may."""
    from trainer_core.contract.config.run_config import config_fields

    key = canonical(key)
    head, dot, sub = key.partition(".")
    if dot and (head not in MAPPINGS or not sub):
        return f"'{key}': only {', '.join(MAPPINGS)} take KEY.SUB=VALUE"
    if head in SAFE or head in TRAINER_ARGS:
        return None
    if head in REFUSED:
        return REFUSED[head]
    if head not in {f.name for f in config_fields()}:
        close = difflib.get_close_matches(head, [*SAFE, *TRAINER_ARGS, *ALIASES], n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"'{head}' is not a setting{hint}"
    return "it is not one of the settings a resume may change"


def safe_names() -> str:
    return ", ".join([*SAFE, *TRAINER_ARGS])


def parse_sets(words: list[str] | None) -> dict[str, str]:
    """``["lr=5e-6", "health.kl_high=2"]`` as ``{"lr": "5e-6", "health.kl_high": "2"}`` (aliases resolved); a word
    without ``=``, or a setting a resume may not change, is a ConfigError naming it, why and the fix."""
    sets: dict[str, str] = {}
    for word in words or []:
        key, eq, value = word.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ConfigError("set", f"--set takes KEY=VALUE, got {word!r} (e.g. --set lr=5e-6).")
        why = why_unsafe(key)
        if why is not None:
            raise ConfigError(
                canonical(key),
                f"--set {key}={value}: a resume may not change {canonical(key)}: {why}. "
                f"Settings a resume may change: {safe_names()}; start a new run to change anything else.",
            )
        sets[canonical(key)] = value
    return sets


def _coerce(key: str, text: str, current: Any) -> Any:
    """``text`` as a value of ``current``'s kind (a float field takes ``5e-6``, a bool ``true``/``false``)."""
    import yaml

    try:
        if is_flag(current):
            low = text.strip().lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return low in ("true", "1", "yes")
        if isinstance(current, float) or (isinstance(current, int) and key in ("lr", "rl_kl_coef")):
            return float(text)
        if isinstance(current, int):
            value = float(text)
            return int(value) if value.is_integer() else value
        if isinstance(current, str):
            return text
        value = yaml.safe_load(text)
        if isinstance(value, str):  # YAML 1.1 reads 5e-6 as text
            try:
                number = float(value)
            except ValueError:
                return value
            return number if math.isfinite(number) else value
        return value
    except (ValueError, yaml.YAMLError):
        kind = {bool: "true or false", float: "a number", int: "a whole number"}.get(type(current), "a value")
        raise ConfigError(key, f"--set {key}={text}: {text!r} is not {kind}.") from None


def apply_sets(config: RunConfig, sets: dict[str, str]) -> tuple[RunConfig, dict[str, dict[str, Any]]]:
    """The config a resume runs with after ``sets`` (from ``parse_sets``), and what changed:
    ``{SETTING: {"from": OLD, "to": NEW}}`` (a setting set to its current value is no change). The values are
    judged by RunConfig's own checks; a problem with one of them is a ConfigError. ``config`` is not changed."""
    from trainer_core.contract.config.run_config import RunConfig

    data = copy.deepcopy(config.to_dict())
    changes: dict[str, dict[str, Any]] = {}
    for key, text in sets.items():
        head, dot, sub = key.partition(".")
        if head in TRAINER_ARGS:
            args = data.setdefault("grpo_args", {})
            old = args.get(head)
            new = _coerce(key, text, old if old is not None else 1.0)
            args[head] = new
        elif dot:
            found = data.get(head)
            mapping: dict[str, Any] = found if isinstance(found, dict) else {}
            old = mapping.get(sub)
            new = _coerce(key, text, old)
            data[head] = {**mapping, sub: new}
        else:
            old = data.get(head)
            new = _coerce(key, text, old)
            data[head] = new
        if old != new:
            changes[key] = {"from": old, "to": new}
    try:
        updated = RunConfig.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise ConfigError("set", f"--set: {exc}") from None
    names = {k.partition(".")[0] for k in changes} | ({"grpo_args"} if set(changes) & set(TRAINER_ARGS) else set())
    problems = [p for p in updated.problems() if p.field in names]
    if problems:
        raise problems[0]
    return updated, changes
