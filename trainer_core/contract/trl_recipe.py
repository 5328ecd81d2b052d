"""Reading a `trl grpo` recipe as it is: its flat TRL keys become RunConfig fields, and none goes unaccounted.

Most GRPO training starts from a TRL or open-r1 recipe (``trl grpo --config recipe.yaml``). So that one runs
under grpo-tui unchanged, every key is either mapped to the RunConfig field that means the same thing,
passed through to GRPOConfig as it is (``grpo_args``), or reported by name: a warning when grpo-tui does
that part itself (the output folder, pushing to the Hub, evaluation), an error when honouring it would need
something grpo-tui cannot do (quantised loading, DoRA, a dataset mixture). A key that is in none of TRL's
classes is refused with the closest known one. Keys the recipe leaves out take TRL's defaults, not
grpo-tui's: a recipe means what `trl grpo` would do with it.

Stdlib only: the CLI reads a recipe before anything heavy is imported.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

from .config import RunConfig
from .config_checks import ConfigError
from .trl_names import (
    LEGACY_FIELDS,
    OPEN_R1_FIELDS,
    RENAMED,
    SAME_NAME,
    TRL_DEFAULTS,
    TRL_FIELDS,
    TRL_UNHONOURED_DEFAULTS,
)

RECIPE_FORMATS = ("auto", "trl", "grpo-tui")
FILE_BUILDERS = {"json": (".json", ".jsonl"), "csv": (".csv",), "parquet": (".parquet",)}

_NO_HUB = "grpo-tui does not push to the Hub; upload RUN/final when the run ends (e.g. hf upload ID RUN/final)"
_NO_EVAL = "grpo-tui trains without an evaluation split"
_OWN_FOLDER = "grpo-tui writes checkpoints to RUN/checkpoints and the final model to RUN/final"
_LORA = ("grpo-tui builds the LoRA adapter from use_peft, lora_r, lora_alpha, lora_dropout and lora_target_modules "
         "only; drop it or train with trl grpo")
_QUANT = "quantised (bitsandbytes) training is not supported by grpo-tui; drop it or train with trl grpo"

# Keys whose job grpo-tui does its own way: a warning, and the run goes on.
IGNORED = {
    "output_dir": _OWN_FOLDER, "overwrite_output_dir": _OWN_FOLDER,
    "logging_dir": "TensorBoard writes to RUN/tensorboard",
    **dict.fromkeys(("push_to_hub", "hub_model_id", "hub_strategy", "hub_private_repo", "hub_token",
                     "hub_always_push", "hub_revision"), _NO_HUB),
    **dict.fromkeys(("do_eval", "eval_strategy", "eval_steps", "per_device_eval_batch_size", "eval_on_start",
                     "dataset_test_split", "test_split_size"), _NO_EVAL),
    "resume_from_checkpoint": "continue a run with grpo-tui train --resume RUN",
    "save_strategy": "grpo-tui saves a checkpoint every save_steps steps (the safety net for crashes)",
    "logging_strategy": "grpo-tui logs every logging_steps steps",
    "use_cpu": "grpo-tui chooses CPU or GPUs from --gpus",
    "disable_tqdm": "grpo-tui prints its own progress lines",
    "do_train": "grpo-tui always trains", "do_predict": "grpo-tui never predicts",
    "ignore_bias_buffers": "GRPO does not use it",
    "env": "set these environment variables in the shell that starts grpo-tui",
}
# Keys that would change the training in a way grpo-tui cannot: an error unless left at TRL's default.
UNSUPPORTED = {
    "reward_model_name_or_path": "reward models are not supported; call the model from a reward function "
                                 "(reward_funcs: [my_rewards.py:score])",
    "dataset_streaming": "grpo-tui loads the dataset whole; drop streaming",
    "streaming": "grpo-tui loads the dataset whole; drop streaming",
    **dict.fromkeys(("lora_target_parameters", "lora_modules_to_save", "lora_task_type", "use_rslora", "use_dora"), _LORA),
    **dict.fromkeys(("load_in_8bit", "load_in_4bit", "bnb_4bit_quant_type", "use_bnb_nested_quant",
                     "bnb_4bit_quant_storage"), _QUANT),
}
# Keys handled below, one by one.
SPECIAL = ("reward_funcs", "reward_weights", "datasets", "bf16", "fp16", "report_to", "warmup_steps",
           "lora_target_modules", "activation_checkpointing", "model_revision", "dtype", "torch_dtype",
           "attn_implementation")
_INIT_KWARGS = {"model_revision": "revision", "dtype": "dtype", "torch_dtype": "dtype",
                "attn_implementation": "attn_implementation"}

RECIPE_KEYS = TRL_FIELDS | set(OPEN_R1_FIELDS) | set(LEGACY_FIELDS) | {"env"}


def _run_fields() -> set[str]:
    return {f.name for f in dataclasses.fields(RunConfig)}


def is_recipe(data: dict, config_format: str = "auto") -> bool:
    """Whether a config file's mapping is a TRL recipe: as told, or (auto) when it has keys only TRL has and
    no ``model`` (grpo-tui's own name for the model)."""
    if config_format not in RECIPE_FORMATS:
        raise ConfigError("format", f"--format must be one of {', '.join(RECIPE_FORMATS)}, got {config_format!r}.")
    if config_format != "auto":
        return config_format == "trl"
    ours = _run_fields()
    return "model" not in data and any(k in RECIPE_KEYS and k not in ours for k in data)


def _same(a: Any, b: Any) -> bool:
    return a == b or (a in (None, [], {}, "") and b in (None, [], {}, ""))


def recipe_to_fields(recipe: dict, source: str = "recipe") -> tuple[dict, list[str]]:
    """RunConfig fields for a `trl grpo` recipe, and notes on what it sets that grpo-tui does its own way.

    Raises ConfigError naming the first key that is unknown (with the closest known key) or that cannot be
    honoured. grpo-tui's own fields (stop_on, health, …) may sit in a recipe too and are taken as they are.
    """
    ours = _run_fields()
    for key in recipe:
        if key not in RECIPE_KEYS and key not in ours:
            close = difflib.get_close_matches(key, sorted(RECIPE_KEYS | ours), n=1, cutoff=0.6)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ConfigError(key, f"unknown key '{key}' in {source}: it is not a field of trl grpo (GRPOScriptArguments, "
                              f"GRPOConfig, ModelConfig, DatasetMixtureConfig) nor of grpo-tui.{hint}")
    values = {**TRL_DEFAULTS, **recipe}
    out: dict[str, Any] = {}
    notes: list[str] = []
    grpo_args: dict[str, Any] = {}
    init_kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key in RENAMED:
            out[RENAMED[key]] = value
        elif key in SAME_NAME:
            out[key] = value
        elif key in SPECIAL:
            continue
        elif key in IGNORED or key in UNSUPPORTED:
            if _same(value, TRL_UNHONOURED_DEFAULTS.get(key)):
                continue
            if key in UNSUPPORTED:
                raise ConfigError(key, f"{source} sets {key}: {value!r}, which grpo-tui cannot honour: {UNSUPPORTED[key]}.")
            notes.append(f"{key}: {value!r} is ignored: {IGNORED[key]}.")
        elif key in TRL_FIELDS:
            grpo_args[key] = value
    for key, name in _INIT_KWARGS.items():
        value = values.get(key)
        if value is not None and not (key == "model_revision" and value == "main") and value != "auto":
            init_kwargs[name] = value
        elif name == "dtype" and value == "auto":  # the checkpoint's own dtype: what grpo-tui does unless told
            init_kwargs.pop("dtype", None)
    if init_kwargs:
        grpo_args["model_init_kwargs"] = {**init_kwargs, **(grpo_args.get("model_init_kwargs") or {})}
    out.update(_precision(values, source))
    out.update(_rewards(values, source))
    out.update(_datasets(values, source, notes))
    out.update(_warmup(values, grpo_args, source))
    if values.get("activation_checkpointing") is not None:
        out["gradient_checkpointing"] = bool(values["activation_checkpointing"])
    if "report_to" in values:
        out["report_to"] = _report_to(values["report_to"], source)
    if values.get("use_peft"):
        out["target_modules"] = _target_modules(values.get("lora_target_modules"), notes)
    if values.get("max_prompt_length") is not None:
        notes.append(f"max_prompt_length: {values['max_prompt_length']} drops the prompts longer than that (TRL 1.x no "
                     "longer has the key; older releases cut them to that length).")
    for key, value in recipe.items():  # grpo-tui's own fields, written into the recipe
        if key in ours and key not in RECIPE_KEYS:
            if key == "grpo_args":
                grpo_args = {**grpo_args, **(value or {})}
                continue
            taken = [k for k, field in RENAMED.items() if field == key and k in recipe]
            if taken:
                raise ConfigError(key, f"{source} sets both '{taken[0]}' (TRL) and '{key}' (grpo-tui) for the same "
                                  "setting; keep one.")
            out[key] = value
    if grpo_args:
        out["grpo_args"] = grpo_args
    return out, notes


def _precision(values: dict, source: str) -> dict:
    bf16, fp16 = values.get("bf16"), values.get("fp16")
    if bf16 and fp16:
        raise ConfigError("bf16", f"{source} sets both bf16 and fp16 to true; choose one.")
    if bf16:
        return {"mixed_precision": "bf16"}
    if fp16:
        return {"mixed_precision": "fp16"}
    if bf16 is False:
        return {"mixed_precision": "no"}
    return {}  # TRL's default (bf16 unless fp16) is grpo-tui's auto: bf16 where the GPU has it, off on CPU


def _rewards(values: dict, source: str) -> dict:
    funcs = values.get("reward_funcs")
    weights = values.get("reward_weights")
    if funcs is None:
        if weights is not None:
            raise ConfigError("reward_weights", f"{source} sets reward_weights but no reward_funcs to weigh.")
        return {}
    if isinstance(funcs, str):
        funcs = [funcs]
    if not isinstance(funcs, list) or not all(isinstance(f, str) for f in funcs):
        raise ConfigError("reward_funcs", f"reward_funcs in {source} must be a list of names, got {funcs!r}.")
    if len(set(funcs)) != len(funcs):
        raise ConfigError("reward_funcs", f"reward_funcs in {source} names a function twice: {funcs!r}; list each once "
                          "and give it the summed weight.")
    if weights is None:
        weights = [1.0] * len(funcs)
    if not isinstance(weights, list) or len(weights) != len(funcs):
        raise ConfigError("reward_weights", f"reward_weights in {source} must be a list with one weight per reward "
                          f"function ({len(funcs)}: {', '.join(funcs)}), got {weights!r}.")
    return {"reward_funcs": dict(zip(funcs, weights))}


def _datasets(values: dict, source: str, notes: list[str]) -> dict:
    entries = values.get("datasets")
    if not entries:
        return {}
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError("datasets", f"datasets in {source} must be a list of mappings (path, name, data_files, split), "
                          f"got {entries!r}.")
    if len(entries) > 1:
        raise ConfigError("datasets", f"{source} mixes {len(entries)} datasets; grpo-tui trains on one. Merge them into "
                          "one file or folder (datasets.concatenate_datasets) and name that.")
    entry = entries[0]
    known = ("path", "name", "data_dir", "data_files", "split", "columns", "fraction")
    for key in entry:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ConfigError("datasets", f"datasets entry in {source} has unknown key '{key}'.{hint}")
    if values.get("dataset_name"):
        notes.append("dataset_name is ignored because datasets is set (as trl grpo does).")
    if entry.get("data_dir"):
        raise ConfigError("datasets", f"datasets entry in {source} sets data_dir; name the folder itself as path instead.")
    if entry.get("columns"):
        notes.append(f"datasets columns {entry['columns']!r}: every column is kept (reward functions get them all).")
    path, files = entry.get("path"), entry.get("data_files")
    if path in FILE_BUILDERS:
        if isinstance(files, list) and len(files) == 1:
            files = files[0]
        if isinstance(files, dict) and len(files) == 1:
            files = next(iter(files.values()))
        if not isinstance(files, str):
            raise ConfigError("datasets", f"datasets entry in {source} reads {path} files; give data_files as one file "
                              f"path (grpo-tui trains on one file), got {files!r}.")
        out = {"dataset": files, "dataset_config": None}
    elif files:
        raise ConfigError("datasets", f"datasets entry in {source} sets data_files for path {path!r}; data_files works "
                          f"with path {' or '.join(FILE_BUILDERS)}.")
    else:
        out = {"dataset": path, "dataset_config": entry.get("name")}
    out["dataset_split"] = entry.get("split") or "train"
    return out


def _warmup(values: dict, grpo_args: dict, source: str) -> dict:
    ratio, steps = values.get("warmup_ratio"), values.get("warmup_steps") or 0
    if ratio and steps:
        raise ConfigError("warmup_ratio", f"{source} sets both warmup_ratio and warmup_steps; keep one.")
    if isinstance(steps, (int, float)) and 0 < steps < 1:  # transformers 5: a fraction of the steps
        return {"warmup_ratio": steps}
    if steps:
        grpo_args["warmup_steps"] = steps
    return {"warmup_ratio": ratio or 0.0} if ratio is not None or steps == 0 else {}


def _report_to(value: Any, source: str) -> str:
    if value in (None, "none", [], ["none"]):
        return "none"
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or "all" in names:
        raise ConfigError("report_to", f"report_to in {source} must name the trackers (trackio, wandb, tensorboard), "
                          f"got {value!r}.")
    return ",".join(str(n) for n in names)


def _target_modules(value: Any, notes: list[str]) -> str:
    if value is None:
        notes.append("lora_target_modules is not set: grpo-tui adapts every linear layer ('all-linear'); TRL would use "
                     "PEFT's default for the architecture. Set lora_target_modules to choose.")
        return "all-linear"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)
