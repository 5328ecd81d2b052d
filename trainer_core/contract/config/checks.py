"""The rules a RunConfig must satisfy, each failure a ConfigError naming the field, the value and the fix.

Stdlib only (like config/run_config.py) so a bad config is refused before torch or TRL is imported; the app runs the
same rules to show every problem under its field.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Callable, Iterator
from typing import Any, Literal, get_args

from trainer_core.contract.config.code_refs import parse_code_ref
from trainer_core.contract.config.slurm_settings import slurm_problems
from trainer_core.contract.config.trl_names import TRL_REWARD_FUNCS
from trainer_core.contract.config.usual_values import USUAL
from trainer_core.contract.health.monitor import STOPPABLE_RULES, SWITCHES, threshold_names
from trainer_core.contract.health.remedy_plan import REMEDY_ACTIONS, REMEDY_RULES
from trainer_core.contract.run.json_values import is_number, is_whole

# The choice fields' types: RunConfig annotates its fields with them, and their values are the choices
# that --help, the form, the docs and the checks below offer.
LossType = Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"]
VllmMode = Literal["colocate", "server"]
MixedPrecision = Literal["auto", "bf16", "fp16", "no"]
TrainerType = Literal["grpo"]
OnMissing = Literal["error", "fallback"]
RemedySeverity = Literal["critical", "warn"]

LOSS_TYPES: tuple[str, ...] = get_args(LossType)
VLLM_MODES: tuple[str, ...] = get_args(VllmMode)
MIXED_PRECISION: tuple[str, ...] = get_args(MixedPrecision)
TRAINERS: tuple[str, ...] = get_args(TrainerType)
ON_MISSING: tuple[str, ...] = get_args(OnMissing)
REMEDY_SEVERITIES: tuple[str, ...] = get_args(RemedySeverity)
TRACKERS = ("trackio", "wandb", "tensorboard")


class ConfigError(ValueError):
    """A config value that cannot run; the message names the field, the value and the fix."""

    def __init__(self, field_name: str, message: str):
        super().__init__(message)
        self.field = field_name


def parse_env_config(value: Any) -> dict | None:
    """Turn --rl-env-config (a JSON string or a mapping) into constructor kwargs."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                "rl_env_config",
                f"rl_env_config must be a JSON object, got {value!r} ({exc.msg} at position {exc.pos}). "
                "Example: --rl-env-config '{\"max_turns\": 3}'",
            ) from None
    if not isinstance(value, dict):
        raise ConfigError(
            "rl_env_config",
            f"rl_env_config must be a JSON object (keyword arguments for the environment class), got "
            f"{type(value).__name__} {json.dumps(value)}. Example: --rl-env-config '{{\"max_turns\": 3}}'",
        )
    return value


def code_ref_list_problems(
    name: str, entries: Any, shape: str, names_one: Callable[[str], object], label: str, how: str
) -> Iterator[ConfigError]:
    """The problems of a setting that is a list of references to the user's functions (``eval_metric``,
    ``tools``): not a list of strings (``shape`` says what one is), or an entry ``names_one`` finds no function in
    (said as ``LABEL 'ENTRY' names no function: HOW``)."""
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        yield ConfigError(name, f"{name} must be a list of {shape}, got {entries!r}.")
        return
    for entry in entries:
        if names_one(entry) is None:
            yield ConfigError(name, f"{label} {entry!r} names no function: {how}")


def word_list(value: Any) -> Any:
    """A list field (notify's URLs, tools): one string may hold several items separated by whitespace (a form's
    text, a YAML scalar); none is none; anything else is returned as it is, for the checks to refuse."""
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if isinstance(value, tuple):
        return list(value)
    return value


def stop_on_rules(c) -> list[str]:
    return [r.strip() for r in (c.stop_on or "").split(",") if r.strip()]


def trackers(c) -> list[str]:
    """report_to as a list of tracker names ([] for 'none')."""
    names = [t.strip() for t in str(c.report_to or "").split(",") if t.strip()]
    return [] if names == ["none"] else names


def is_dataset_run(c) -> bool:
    """A run on a dataset with reward functions, rather than on an environment class."""
    return bool(c.dataset or c.reward_funcs) and not (c.rl_env_module or c.rl_env_class)


def _source_problems(c):
    """An environment run names its module and class; a dataset run its dataset and reward functions."""
    env_given = bool(c.rl_env_module or c.rl_env_class)
    data_given = bool(c.dataset or c.reward_funcs)
    if env_given and data_given:
        yield ConfigError(
            "dataset",
            f"a run trains on an environment or on a dataset with reward functions, not both; got rl_env_module="
            f"{c.rl_env_module!r} and dataset={c.dataset!r}, reward_funcs={c.reward_funcs!r}. Drop --rl-env-module/"
            "--rl-env-class, or --dataset/--reward-func.",
        )
    elif data_given:
        if not c.dataset:
            yield ConfigError(
                "dataset",
                "reward_funcs are set but dataset is not: pass --dataset with a local folder, "
                "a .jsonl/.csv/.parquet file or a Hub dataset id holding the prompts.",
            )
        yield from reward_func_problems(c.reward_funcs)
        for name in ("dataset_split", "prompt_column"):
            value = getattr(c, name)
            if not isinstance(value, str) or not value.strip():
                yield ConfigError(name, f"{name} must be a non-empty string, got {value!r}.")
    elif not c.rl_env_module or not c.rl_env_class:
        missing = [n for n in ("rl_env_module", "rl_env_class") if not getattr(c, n)]
        yield ConfigError(
            missing[0],
            f"GRPO requires --rl-env-module and --rl-env-class (missing: {', '.join(missing)}). "
            "Point them at a module and the environment class in it, e.g. "
            "--rl-env-module examples/math_env.py --rl-env-class MathEnv; or train on a dataset with reward "
            "functions: --dataset prompts.jsonl --reward-func think_format_reward",
        )


def reward_func_kind(name: str) -> str | None:
    """'builtin' (one of TRL's), 'file' (FILE.py:FUNCTION) or 'dotted' (pkg.module.function, pkg.module:function):
    the grammar tools share (config/code_refs.py), naming one function (a weight is one function's); else None."""
    if name in TRL_REWARD_FUNCS:
        return "builtin"
    ref = parse_code_ref(name)
    if ref is None or len(ref.names) != 1:
        return None
    return "file" if ref.file else "dotted"


def reward_func_problems(funcs):
    if not isinstance(funcs, dict):
        yield ConfigError(
            "reward_funcs",
            f"reward_funcs must be a mapping of NAME: WEIGHT (or a list of names), got "
            f"{funcs!r}. Example: {{think_format_reward: 1.0, my_rewards.py:correct: 2.0}}",
        )
        return
    if not funcs:
        yield ConfigError(
            "reward_funcs",
            "a dataset run needs at least one reward function: pass --reward-func NAME "
            f"(one of {', '.join(TRL_REWARD_FUNCS)}, a dotted path, or FILE.py:FUNCTION).",
        )
    for name, weight in funcs.items():
        ref = parse_code_ref(name) if isinstance(name, str) else None
        if ref is not None and len(ref.names) > 1:
            each = ", ".join(f"{ref.where}:{n}" for n in ref.names)
            yield ConfigError(
                "reward_funcs",
                f"reward function {name!r} names {len(ref.names)} functions; each has a weight of its own, so give "
                f"each its own entry: {each}.",
            )
        elif not isinstance(name, str) or reward_func_kind(name) is None:
            close = difflib.get_close_matches(str(name), TRL_REWARD_FUNCS, n=1)
            hint = (
                f" Did you mean '{close[0]}'?"
                if close
                else (
                    " (Names from another registry, such as open-r1's 'format', are found by their import path: "
                    "open_r1.rewards.format_reward.)"
                )
            )
            yield ConfigError(
                "reward_funcs",
                f"reward function {name!r} is not one of TRL's ({', '.join(TRL_REWARD_FUNCS)}), "
                f"a dotted import path (my_pkg.rewards.fn) or FILE.py:FUNCTION.{hint}",
            )
        if not is_number(weight):
            yield ConfigError(
                "reward_funcs", f"the weight of reward function {name!r} must be a finite number, got {weight!r}."
            )


def iter_problems(c, world_size: int = 1):
    """Yield a ConfigError for every value that cannot run, in field order."""
    yield from _source_problems(c)
    yield from _basic_problems(c)
    yield from _number_problems(c)
    yield from _combination_problems(c, world_size)
    yield from _health_problems(c)
    yield from _remedy_problems(c)
    for message in slurm_problems(c.slurm):
        yield ConfigError("slurm", message)
    yield from _grpo_args_problems(c)


def _basic_problems(c):
    if not c.model:
        yield ConfigError("model", "model is required: pass --model with a local folder or a Hub model id.")
    if c.trainer not in TRAINERS:
        yield ConfigError("trainer", f"trainer must be 'grpo', got {c.trainer!r}.")
    try:
        parse_env_config(c.rl_env_config)
    except ConfigError as exc:
        yield exc
    for name, choices in (
        ("rl_loss_type", LOSS_TYPES),
        ("vllm_mode", VLLM_MODES),
        ("mixed_precision", MIXED_PRECISION),
        ("on_missing", ON_MISSING),
    ):
        value = getattr(c, name)
        if value not in choices:
            yield ConfigError(name, f"{name} must be one of {', '.join(choices)}; got {value!r}.")


_MIN_INTS = {
    "rl_num_generations": 2,
    "rl_max_new_tokens": 1,
    "batch_size": 1,
    "gradient_accumulation": 1,
    "lora_r": 1,
    "lora_alpha": 1,
    "logging_steps": 1,
    "save_steps": 1,
    "vllm_tensor_parallel_size": 1,
    "vllm_server_gpus": 0,
    "rl_top_k": 0,
    "samples_per_step": 0,
}
_INT_FIXES = {"rl_num_generations": "GRPO compares completions within a group; use at least 2 (4-16 is typical)."}
_RANGES = (
    ("rl_temperature", lambda v: v > 0, "> 0 (1.0 samples the model's distribution as is)"),
    ("rl_top_p", lambda v: 0 < v <= 1, "in (0, 1] (1.0 disables nucleus sampling)"),
    ("vllm_gpu_memory_utilization", lambda v: 0 < v <= 1, "in (0, 1]"),
    ("rl_kl_coef", lambda v: v >= 0, ">= 0 (0 disables the KL penalty)"),
    ("rl_clip_range", lambda v: v > 0, "> 0 (0.2 is typical)"),
    ("lr", lambda v: v > 0, f"> 0 ({USUAL['lr'].text})"),
    ("epochs", lambda v: v > 0, "> 0"),
    ("lora_dropout", lambda v: 0 <= v < 1, "in [0, 1)"),
    ("warmup_ratio", lambda v: 0 <= v < 1, "in [0, 1)"),
)


def _positive_int_or_none(value) -> bool:
    return value is None or is_whole(value, 1)


def _number_problems(c):
    for name, low in _MIN_INTS.items():
        value = getattr(c, name)
        if not is_whole(value, low):
            fix = _INT_FIXES.get(name, f"use an integer >= {low}.")
            yield ConfigError(name, f"{name} must be an integer >= {low}, got {value!r}. {fix}")
    if not is_whole(c.max_steps, -1) or c.max_steps == 0:
        yield ConfigError("max_steps", f"max_steps must be a positive integer or -1 (use epochs), got {c.max_steps!r}.")
    for name in ("max_prompt_length", "save_total_limit"):
        if not _positive_int_or_none(getattr(c, name)):
            yield ConfigError(name, f"{name} must be a positive integer, got {getattr(c, name)!r}.")
    for name, ok, rule in _RANGES:
        value = getattr(c, name)
        if not is_number(value) or not ok(value):
            yield ConfigError(name, f"{name} must be {rule}; got {value!r}.")


def _combination_problems(c, world_size: int):
    if c.use_vllm and c.vllm_mode == "server" and not c.vllm_server_url and not c.vllm_server_gpus:
        yield ConfigError(
            "vllm_server_url",
            "vllm_mode 'server' needs either --vllm-server-url (a running server) or --vllm-server-gpus >= 1 "
            "(GPUs for a server the run starts); got neither.",
        )
    if (
        is_whole(c.batch_size, None)
        and is_whole(c.gradient_accumulation, None)
        and is_whole(c.rl_num_generations, None)
    ):
        generation_batch = c.batch_size * world_size * max(c.gradient_accumulation, 1)
        if c.rl_num_generations >= 2 and generation_batch % c.rl_num_generations:
            yield ConfigError(
                "batch_size",
                f"batch_size ({c.batch_size}) x processes ({world_size}) x gradient_accumulation "
                f"({c.gradient_accumulation}) = {generation_batch} completions per generation batch, which must be "
                f"divisible by rl_num_generations ({c.rl_num_generations}) so every prompt gets a full group. "
                f"Set --batch-size to a multiple of {c.rl_num_generations} or change --rl-num-generations.",
            )
    unknown = [t for t in trackers(c) if t not in TRACKERS] if isinstance(c.report_to, str) else [c.report_to]
    if unknown:
        yield ConfigError(
            "report_to",
            f"report_to must be none or trackers among {', '.join(TRACKERS)} (comma-separated); got {c.report_to!r}.",
        )


_OWNED_GRPO_ARGS = {
    "beta": "rl_kl_coef",
    "epsilon": "rl_clip_range",
    "max_completion_length": "rl_max_new_tokens",
    "num_generations": "rl_num_generations",
    "loss_type": "rl_loss_type",
    "learning_rate": "lr",
    "per_device_train_batch_size": "batch_size",
    "num_train_epochs": "epochs",
    "output_dir": "the run folder",
    "temperature": "rl_temperature",
    "top_p": "rl_top_p",
    "top_k": "rl_top_k",
    "reward_weights": "reward_funcs",
    "project": "project_name",
    "max_tool_calling_iterations": "max_tool_calls",
}


def _grpo_args_problems(c):
    if not isinstance(c.grpo_args, dict):
        yield ConfigError("grpo_args", f"grpo_args must be a mapping of GRPOConfig field: value, got {c.grpo_args!r}.")
        return
    for key in c.grpo_args:
        if key in _OWNED_GRPO_ARGS:
            yield ConfigError(
                "grpo_args",
                f"grpo_args sets '{key}', which this tool controls through {_OWNED_GRPO_ARGS[key]}; set that instead.",
            )


def _health_problems(c):
    for rule in stop_on_rules(c):
        if rule not in STOPPABLE_RULES:
            close = difflib.get_close_matches(rule, STOPPABLE_RULES, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            yield ConfigError(
                "stop_on",
                f"stop_on names unknown rule '{rule}'.{hint} Rules that can stop a run: {', '.join(STOPPABLE_RULES)}.",
            )
    if not isinstance(c.health, dict):
        yield ConfigError("health", f"health must be a mapping of threshold: value, got {c.health!r}.")
        return
    names = threshold_names()
    for key, value in c.health.items():
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else f" Known thresholds: {', '.join(names)}."
            yield ConfigError("health", f"health sets unknown threshold '{key}'.{hint}")
        elif key in SWITCHES:
            if not (is_number(value) and value in (0, 1)):
                yield ConfigError("health", f"health switch {key} must be 0 (off) or 1 (on), got {value!r}.")
        elif not is_number(value) or value <= 0:
            yield ConfigError("health", f"health threshold {key} must be a positive number, got {value!r}.")
        elif key.endswith("_percent") and value > 100:
            yield ConfigError(
                "health", f"health threshold {key} is a percentage of the disk, at most 100; got {value!r}."
            )


def resume_may_change(c, key: str) -> str | None:
    """Why a resume of a run with config ``c`` may not change setting ``key`` (None: it may): the hook
    ``--remedy-set`` is checked through. It asks only that ``key`` be a setting: the list of the settings a resume
    may change (config/resume_changes.py) imports this module, so it judges a remedy's settings when it is applied."""
    if key not in {f.name for f in dataclasses.fields(c)}:
        return f"'{key}' is not a setting"
    return None


def _remedy_problems(c):
    if not isinstance(c.remedy, dict):
        yield ConfigError("remedy", f"remedy must be a mapping of rule: rollback, got {c.remedy!r}.")
    else:
        for rule, action in c.remedy.items():
            if rule not in REMEDY_RULES:
                close = difflib.get_close_matches(rule, REMEDY_RULES, n=1)
                hint = f" Did you mean '{close[0]}'?" if close else ""
                what = "cannot take a remedy" if rule in STOPPABLE_RULES else "is not a health rule"
                yield ConfigError(
                    "remedy",
                    f"remedy names '{rule}', which {what}.{hint} Rules that can take a remedy: "
                    f"{', '.join(REMEDY_RULES)} (e.g. --remedy kl_explosion=rollback).",
                )
            elif rule in stop_on_rules(c):
                yield ConfigError(
                    "remedy",
                    f"{rule} is in both stop_on and remedy: --stop-on would stop the run before the remedy could act. "
                    f"Drop it from --stop-on (after --max-remedies rollbacks the rule stops the run anyway).",
                )
            elif action not in REMEDY_ACTIONS:
                yield ConfigError(
                    "remedy",
                    f"remedy for {rule} is {action!r}; the one remedy is rollback (--remedy {rule}=rollback).",
                )
    scale = c.remedy_lr_scale
    if not is_number(scale) or not 0 < scale <= 1:
        yield ConfigError(
            "remedy_lr_scale",
            f"remedy_lr_scale must be a number with 0 < F <= 1 (the share of the learning rate a rollback keeps), "
            f"got {scale!r}; e.g. --remedy-lr-scale 0.5.",
        )
    if not is_whole(c.max_remedies) or c.max_remedies < 1:
        yield ConfigError(
            "max_remedies", f"max_remedies must be a whole number of rollbacks, 1 or more, got {c.max_remedies!r}."
        )
    if c.remedy_severity not in REMEDY_SEVERITIES:
        yield ConfigError("remedy_severity", f"remedy_severity must be critical or warn, got {c.remedy_severity!r}.")
    if not isinstance(c.remedy_set, dict):
        yield ConfigError("remedy_set", f"remedy_set must be a mapping of setting: value, got {c.remedy_set!r}.")
        return
    for key in c.remedy_set:
        if key == "lr":
            yield ConfigError(
                "remedy_set",
                "remedy_set sets lr; a rollback's learning rate is the current one times --remedy-lr-scale. "
                "Set --remedy-lr-scale instead.",
            )
        elif (why := resume_may_change(c, key)) is not None:
            yield ConfigError(
                "remedy_set",
                f"remedy_set sets {key}, which a resume may not change: {why}. Drop --remedy-set {key}=...",
            )
