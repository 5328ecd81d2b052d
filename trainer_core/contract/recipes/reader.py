"""Reading a `trl grpo` recipe as it is: its flat TRL keys become RunConfig fields, and none goes unaccounted.

Most GRPO training starts from a TRL or open-r1 recipe (``trl grpo --config recipe.yaml``). So that one runs
under grpo-tui unchanged, every key is either mapped to the RunConfig field that means the same thing,
passed through to GRPOConfig as it is (``grpo_args``), or reported by name: a warning when grpo-tui does
that part itself (the output folder, pushing to the Hub, evaluation), an error when honouring it would need
something grpo-tui cannot do (quantised loading, DoRA, a dataset mixture). Keys that TRL, transformers or
open-r1 retired are read through ``recipe_keys.RETIRED_KEYS`` first: renamed ones under their current name,
dead ones reported as ignored, each with a note that says which release changed it; ``strict`` makes every
ignored key an error. A key in none of these is refused with the closest known one. Keys the recipe leaves
out take TRL's defaults, not grpo-tui's: a recipe means what `trl grpo` would do with it.

Stdlib only: the CLI reads a recipe before anything heavy is imported.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

from trainer_core.contract.config.checks import ConfigError
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.config.trl_names import RENAMED, SAME_NAME, TRL_DEFAULTS, TRL_FIELDS, TRL_UNHONOURED_DEFAULTS
from trainer_core.contract.recipes.keys import BY_KEY, RetiredKey, note, shown
from trainer_core.contract.run.json_values import is_number

RECIPE_FORMATS = ("auto", "trl", "grpo-tui")
FILE_BUILDERS = {"json": (".json", ".jsonl"), "csv": (".csv",), "parquet": (".parquet",)}
STRICT_HELP = (
    "with a trl grpo recipe: refuse every key that grpo-tui would ignore (obsolete keys such as vllm_device, "
    "open-r1's own ones, output_dir, hub_* ...) instead of warning about it"
)

_NO_HUB = "grpo-tui does not push to the Hub; upload RUN/final when the run ends (e.g. hf upload ID RUN/final)"
_NO_EVAL = "grpo-tui evaluates the held-out split as eval_strategy, eval_steps and dataset_test_split say"
_OWN_FOLDER = "grpo-tui writes checkpoints to RUN/checkpoints and the final model to RUN/final"
_LORA = (
    "grpo-tui builds the LoRA adapter from use_peft, lora_r, lora_alpha, lora_dropout and lora_target_modules "
    "only; drop it or train with trl grpo"
)
_QUANT = "quantised (bitsandbytes) training is not supported by grpo-tui; drop it or train with trl grpo"

# Keys whose job grpo-tui does its own way: a warning, and the run goes on.
IGNORED = {
    "output_dir": _OWN_FOLDER,
    **dict.fromkeys(
        (
            "push_to_hub",
            "hub_model_id",
            "hub_strategy",
            "hub_private_repo",
            "hub_token",
            "hub_always_push",
            "hub_revision",
        ),
        _NO_HUB,
    ),
    **dict.fromkeys(
        (
            "do_eval",
            "test_split_size",
        ),
        _NO_EVAL,
    ),
    "resume_from_checkpoint": "continue a run with grpo-tui train --resume RUN",
    "save_strategy": "grpo-tui saves a checkpoint every save_steps steps (the safety net for crashes)",
    "logging_strategy": "grpo-tui logs every logging_steps steps",
    "use_cpu": "grpo-tui chooses CPU or GPUs from --gpus",
    "disable_tqdm": "grpo-tui prints its own progress lines",
    "do_train": "grpo-tui always trains",
    "do_predict": "grpo-tui never predicts",
    "ignore_bias_buffers": "GRPO does not use it",
    "env": "set these environment variables in the shell that starts grpo-tui",
}
# Keys that would change the training in a way grpo-tui cannot: an error unless left at TRL's default.
UNSUPPORTED = {
    "reward_model_name_or_path": "reward models are not supported; call the model from a reward function "
    "(reward_funcs: [my_rewards.py:score])",
    "dataset_streaming": "grpo-tui loads the dataset whole; drop streaming",
    "streaming": "grpo-tui loads the dataset whole; drop streaming",
    **dict.fromkeys(
        ("lora_target_parameters", "lora_modules_to_save", "lora_task_type", "use_rslora", "use_dora"), _LORA
    ),
    **dict.fromkeys(
        ("load_in_8bit", "load_in_4bit", "bnb_4bit_quant_type", "use_bnb_nested_quant", "bnb_4bit_quant_storage"),
        _QUANT,
    ),
}
# Keys handled below, one by one.
SPECIAL = (
    "reward_funcs",
    "reward_weights",
    "datasets",
    "bf16",
    "fp16",
    "report_to",
    "warmup_steps",
    "lora_target_modules",
    "activation_checkpointing",
    "model_revision",
    "dtype",
    "attn_implementation",
    *("eval_strategy", "eval_steps", "dataset_test_split", "per_device_eval_batch_size"),
    *("num_generations_eval", "eval_on_start"),
)
_INIT_KWARGS = {"model_revision": "revision", "dtype": "dtype", "attn_implementation": "attn_implementation"}

RECIPE_KEYS = TRL_FIELDS | set(BY_KEY) | {"env"}


@dataclasses.dataclass
class _Notes:
    """The notes a recipe earns; with ``strict``, an ignored key is an error instead of a note."""

    source: str
    strict: bool
    lines: list[str] = dataclasses.field(default_factory=list)

    def add(self, text: str) -> None:
        self.lines.append(text)

    def ignored(self, key: str, text: str) -> None:
        if self.strict:
            raise ConfigError(
                key,
                f"{self.source}: {text} (--strict refuses ignored keys: remove '{key}' from the "
                "recipe, or read it without --strict)",
            )
        self.lines.append(text)


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


def recipe_to_fields(recipe: dict, source: str = "recipe", strict: bool = False) -> tuple[dict, list[str]]:
    """RunConfig fields for a `trl grpo` recipe, and notes on what it sets that grpo-tui does its own way.

    Raises ConfigError naming the first key that is unknown (with the closest known key) or that cannot be
    honoured, and with ``strict`` the first key that would be ignored. Retired keys (``recipe_keys``) are read
    under their current name first. grpo-tui's own fields (stop_on, health, …) may sit in a recipe too and are
    taken as they are.
    """
    ours = _run_fields()
    _check_known(recipe, source, ours)
    notes = _Notes(source, strict)
    current, honoured = _retire(recipe, notes)
    values = {**TRL_DEFAULTS, **current}
    out, grpo_args = _map_keys(values, source, notes)
    out.update(honoured)
    _init_kwargs(values, grpo_args)
    out.update(_precision(values, source))
    out.update(_rewards(values, source))
    out.update(_datasets(values, source, notes))
    out.update(_warmup(values, grpo_args))
    out.update(_evaluation(values, out, notes))
    if values.get("activation_checkpointing") is not None:
        out["gradient_checkpointing"] = bool(values["activation_checkpointing"])
    if "report_to" in values:
        out["report_to"] = _report_to(values["report_to"], source)
    if values.get("use_peft"):
        out["target_modules"] = _target_modules(values.get("lora_target_modules"), notes)
    grpo_args = _own_fields(recipe, ours, out, grpo_args, source)
    if grpo_args:
        out["grpo_args"] = grpo_args
    return out, notes.lines


def _check_known(recipe: dict, source: str, ours: set[str]) -> None:
    for key in recipe:
        if key not in RECIPE_KEYS and key not in ours:
            close = difflib.get_close_matches(key, sorted(RECIPE_KEYS | ours), n=1, cutoff=0.6)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ConfigError(
                key,
                f"unknown key '{key}' in {source}: it is not a field of trl grpo (GRPOScriptArguments, "
                "GRPOConfig, ModelConfig, DatasetMixtureConfig) nor of grpo-tui, nor a key TRL or open-r1 "
                f"retired.{hint}",
            )


def _retire(recipe: dict, notes: _Notes) -> tuple[dict, dict]:
    """The recipe with its retired keys read under their current names, and the grpo-tui fields set by keys
    only grpo-tui honours (open-r1's system_prompt, …); each retired key earns a note or, ignored, is dropped."""
    current = {k: v for k, v in recipe.items() if k not in BY_KEY}
    honoured: dict[str, Any] = {}
    for key, value in recipe.items():
        row = BY_KEY.get(key)
        if row is None:
            continue
        if row.kind == "ignored":
            if not any(_same(value, v) for v in row.no_op):
                notes.ignored(key, note(row, value))
            continue
        notes.add(note(row, value))
        if row.kind == "honoured":
            honoured[row.becomes] = value
        else:
            _rename(row, value, current, notes)
    if "vllm_device" in recipe:
        _vllm_share(recipe, notes)
    return current, honoured


def _rename(row: RetiredKey, value: Any, current: dict, notes: _Notes) -> None:
    value = _ADAPT[row.key](value, notes.source) if row.key in _ADAPT else value
    new = row.becomes
    if new in current and not _same(current[new], TRL_DEFAULTS.get(new)) and current[new] != value:
        raise ConfigError(
            row.key,
            f"{notes.source} sets both '{row.key}' ({row.release}) and '{new}', its current "
            f"name, to different values ({value!r}, {current[new]!r}); keep '{new}'.",
        )
    if value is not None:
        current[new] = value


def _one_config(value: Any, source: str) -> str | None:
    """open-r1's early ``dataset_configs`` list as TRL's one ``dataset_config`` ('all': the default one)."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ConfigError(
            "dataset_configs", f"dataset_configs in {source} must be a list of configuration names, got {value!r}."
        )
    names = [n for n in names if n != "all"]
    if len(names) > 1:
        raise ConfigError(
            "dataset_configs",
            f"{source} names {len(names)} dataset configurations ({', '.join(names)}); "
            "grpo-tui trains on one: set dataset_config to it.",
        )
    return names[0] if names else None


def _ratio(value: Any, source: str) -> Any:
    if not is_number(value) or not 0 <= value < 1:
        raise ConfigError(
            "warmup_ratio",
            f"warmup_ratio in {source} must be a fraction of the steps, at least 0 and below 1, got {value!r}.",
        )
    return value


_ADAPT = {"dataset_configs": _one_config, "warmup_ratio": _ratio}


def _vllm_share(recipe: dict, notes: _Notes) -> None:
    """TRL 0.14-0.15 recipes gave vLLM a GPU of its own; their memory share means something else in colocate mode."""
    share = recipe.get("vllm_gpu_memory_utilization")
    if (
        recipe.get("use_vllm")
        and share is not None
        and recipe.get("vllm_mode", TRL_DEFAULTS["vllm_mode"]) == "colocate"
    ):
        notes.add(
            f"vllm_gpu_memory_utilization: {share!r} was a share of vllm_device's own GPU; in colocate mode it is "
            "a share of each training GPU, next to the model being trained: lower it (TRL's default is "
            f"{TRL_DEFAULTS['vllm_gpu_memory_utilization']}) or use vllm_mode: server."
        )


def _map_keys(values: dict, source: str, notes: _Notes) -> tuple[dict, dict]:
    """The RunConfig fields of the keys mapped one to one, and the GRPOConfig keys passed through."""
    out: dict[str, Any] = {}
    grpo_args: dict[str, Any] = {}
    for key, value in values.items():
        if key in RENAMED:
            out[RENAMED[key]] = value
        elif key in SAME_NAME:
            out[key] = value
        elif key in IGNORED or key in UNSUPPORTED:
            _unhonoured(key, value, source, notes)
        elif key in TRL_FIELDS and key not in SPECIAL:
            grpo_args[key] = value
    return out, grpo_args


def _unhonoured(key: str, value: Any, source: str, notes: _Notes) -> None:
    if _same(value, TRL_UNHONOURED_DEFAULTS.get(key)):
        return
    if key in UNSUPPORTED:
        raise ConfigError(key, f"{source} sets {key}: {value!r}, which grpo-tui cannot honour: {UNSUPPORTED[key]}.")
    notes.ignored(key, f"{key}: {shown(value)} is ignored: {IGNORED[key]}.")


def _init_kwargs(values: dict, grpo_args: dict) -> None:
    """The model-loading keys, as ``trl grpo`` hands them to from_pretrained (grpo_args.model_init_kwargs)."""
    init_kwargs: dict[str, Any] = {}
    for key, name in _INIT_KWARGS.items():
        value = values.get(key)
        if value is not None and not (key == "model_revision" and value == "main") and value != "auto":
            init_kwargs[name] = value  # dtype 'auto': the checkpoint's own dtype, what grpo-tui does unless told
    if init_kwargs:
        grpo_args["model_init_kwargs"] = {**init_kwargs, **(grpo_args.get("model_init_kwargs") or {})}


def _own_fields(recipe: dict, ours: set[str], out: dict, grpo_args: dict, source: str) -> dict:
    """grpo-tui's own fields written into the recipe go into ``out``; returns grpo_args with the recipe's own."""
    for key, value in recipe.items():
        if key not in ours or key in RECIPE_KEYS:
            continue
        if key == "grpo_args":
            grpo_args = {**grpo_args, **(value or {})}
            continue
        taken = [k for k, field in _RECIPE_NAMES.items() if field == key and k in recipe]
        if taken:
            raise ConfigError(
                key, f"{source} sets both '{taken[0]}' (TRL) and '{key}' (grpo-tui) for the same setting; keep one."
            )
        out[key] = value
    return grpo_args


# Recipe keys read into a grpo-tui field of another name: a recipe may not set the field as well.
_RECIPE_NAMES = {**RENAMED, **{row.key: row.becomes for row in BY_KEY.values() if row.kind == "honoured"}}


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
        raise ConfigError(
            "reward_funcs",
            f"reward_funcs in {source} names a function twice: {funcs!r}; list each once "
            "and give it the summed weight.",
        )
    if weights is None:
        weights = [1.0] * len(funcs)
    if not isinstance(weights, list) or len(weights) != len(funcs):
        raise ConfigError(
            "reward_weights",
            f"reward_weights in {source} must be a list with one weight per reward "
            f"function ({len(funcs)}: {', '.join(funcs)}), got {weights!r}.",
        )
    return {"reward_funcs": dict(zip(funcs, weights))}


def _datasets(values: dict, source: str, notes: _Notes) -> dict:
    entries = values.get("datasets")
    if not entries:
        return {}
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError(
            "datasets",
            f"datasets in {source} must be a list of mappings (path, name, data_files, split), got {entries!r}.",
        )
    if len(entries) > 1:
        raise ConfigError(
            "datasets",
            f"{source} mixes {len(entries)} datasets; grpo-tui trains on one. Merge them into "
            "one file or folder (datasets.concatenate_datasets) and name that.",
        )
    entry = entries[0]
    known = ("path", "name", "data_dir", "data_files", "split", "columns", "fraction")
    for key in entry:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ConfigError("datasets", f"datasets entry in {source} has unknown key '{key}'.{hint}")
    if values.get("dataset_name"):
        notes.ignored(
            "dataset_name",
            f"dataset_name: {values['dataset_name']!r} is ignored because datasets is set (as trl grpo does).",
        )
    if entry.get("data_dir"):
        raise ConfigError(
            "datasets", f"datasets entry in {source} sets data_dir; name the folder itself as path instead."
        )
    if entry.get("columns"):
        notes.add(f"datasets columns {entry['columns']!r}: every column is kept (reward functions get them all).")
    path, files = entry.get("path"), entry.get("data_files")
    if path in FILE_BUILDERS:
        if isinstance(files, list) and len(files) == 1:
            files = files[0]
        if isinstance(files, dict) and len(files) == 1:
            files = next(iter(files.values()))
        if not isinstance(files, str):
            raise ConfigError(
                "datasets",
                f"datasets entry in {source} reads {path} files; give data_files as one file "
                f"path (grpo-tui trains on one file), got {files!r}.",
            )
        out = {"dataset": files, "dataset_config": None}
    elif files:
        raise ConfigError(
            "datasets",
            f"datasets entry in {source} sets data_files for path {path!r}; data_files works "
            f"with path {' or '.join(FILE_BUILDERS)}.",
        )
    else:
        out = {"dataset": path, "dataset_config": entry.get("name")}
    out["dataset_split"] = entry.get("split") or "train"
    return out


def _warmup(values: dict, grpo_args: dict) -> dict:
    steps = values.get("warmup_steps") or 0
    if is_number(steps) and 0 < steps < 1:  # transformers 5: a fraction of the steps
        return {"warmup_ratio": steps}
    if steps:
        grpo_args["warmup_steps"] = steps
        return {}
    return {"warmup_ratio": 0.0}


def _report_to(value: Any, source: str) -> str:
    if value in (None, "none", [], ["none"]):
        return "none"
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or "all" in names:
        raise ConfigError(
            "report_to", f"report_to in {source} must name the trackers (trackio, wandb, tensorboard), got {value!r}."
        )
    return ",".join(str(n) for n in names)


def _target_modules(value: Any, notes: _Notes) -> str:
    if value is None:
        notes.add(
            "lora_target_modules is not set: grpo-tui adapts every linear layer ('all-linear'); TRL would use "
            "PEFT's default for the architecture. Set lora_target_modules to choose."
        )
        return "all-linear"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


_EVAL_KEYS = ("eval_steps", "dataset_test_split", "per_device_eval_batch_size", "num_generations_eval", "eval_on_start")


def _evaluation(values: dict, out: dict, notes: _Notes) -> dict:
    """TRL's evaluation keys as grpo-tui's held-out evaluation: with ``eval_strategy`` other than 'no', the
    recipe's ``dataset_test_split`` of its dataset is the held-out set, evaluated every ``eval_steps`` (TRL's
    default: every logging step), ``num_generations_eval`` samples each, and at the start if ``eval_on_start``."""
    source = notes.source
    strategy = values.get("eval_strategy") or "no"
    if strategy == "no":
        for key in _EVAL_KEYS:
            if key in values and not _same(values[key], TRL_DEFAULTS.get(key)):
                notes.ignored(
                    key,
                    f"{key}: {shown(values[key])} is ignored: eval_strategy is 'no' (trl grpo evaluates nothing either).",
                )
        return {}
    if strategy not in ("steps", "epoch"):
        raise ConfigError("eval_strategy", f"eval_strategy in {source} must be no, steps or epoch, got {strategy!r}.")
    if not out.get("dataset"):
        raise ConfigError(
            "eval_strategy",
            f"{source} sets eval_strategy: {strategy} without a dataset_name to take its dataset_test_split from; "
            "name the dataset, or set eval_strategy: no.",
        )
    fields: dict[str, Any] = {
        "eval_dataset": out["dataset"],
        "eval_split": values.get("dataset_test_split") or "test",
        "eval_on_start": bool(values.get("eval_on_start")),
    }
    if strategy == "steps":
        fields["eval_steps"] = values.get("eval_steps") or out.get("logging_steps") or TRL_DEFAULTS.get("logging_steps")
    if values.get("num_generations_eval"):
        fields["eval_generations"] = values["num_generations_eval"]
    if values.get("per_device_eval_batch_size"):
        fields["eval_batch_size"] = values["per_device_eval_batch_size"]
    return fields
