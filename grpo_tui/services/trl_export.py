"""Handing a run back as a `trl grpo` recipe: the RunConfig of a dataset + reward-functions run as TRL keys.

The way back from grpo-tui to plain TRL is one file: what ``trl grpo --config`` accepts, every mapped value
written out (grpo-tui's defaults differ from TRL's: beta, num_generations, the learning rate …), and what
TRL's CLI has no key for listed in the file's header instead of silently left out. No key that TRL or
open-r1 retired is written (``recipe_keys.RETIRED_KEYS``, the table the reader uses). An environment run
cannot go this way: TRL's CLI has no environment concept, so the error points to the Python API.

Stdlib + yaml, like the rest of the contract: ``grpo-tui export`` runs without the training stack.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from trainer_core.contract.config.checks import ConfigError, reward_func_kind, trackers
from trainer_core.contract.config.code_refs import parse_code_ref
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.config.trl_names import RENAMED, SAME_NAME
from trainer_core.contract.recipes.keys import BY_KEY, RETIRED_KEYS, shown
from trainer_core.contract.recipes.reader import FILE_BUILDERS

# grpo-tui's own RunConfig fields, which TRL's CLI has no key for, with what to do about each when it differs
# from the default (the fields of keys only grpo-tui honours, such as system_prompt, are in RETIRED_KEYS).
NOT_IN_TRL = {
    "stop_on": "grpo-tui's health rules do not run under trl grpo",
    "health": "grpo-tui's health rules do not run under trl grpo",
    "samples_per_step": "samples.jsonl is grpo-tui's; TRL's log_completions prints completions instead",
    "slurm": "submit trl grpo with your own sbatch script",
    "vllm_server_gpus": "start the server yourself with trl vllm-serve and set vllm_server_base_url",
    "inspection": "the reward inspection is grpo-tui's",
    "tags": "a run's tags are grpo-tui's (a tracker's own tags are set in its settings)",
    "notes": "a run's notes are grpo-tui's",
    "tools": "trl grpo takes no tool functions; pass them to GRPOTrainer(tools=[...]) in a script of your own",
    "eval_fraction": "trl grpo evaluates a split of the dataset (dataset_test_split), not a share of its training split",
    "eval_metric": "trl grpo measures only the reward functions on the evaluation split",
    "eval_temperature": "trl grpo samples the evaluation at the training temperature",
    "eval_max_prompts": "trl grpo evaluates the whole split",
    "keep_best": "trl grpo keeps the last save_total_limit checkpoints only",
    **dict.fromkeys(
        ("remedy", "remedy_lr_scale", "remedy_set", "max_remedies", "remedy_severity", "remedy_keep_bad"),
        "grpo-tui's remedies (a rollback by the run's root when a health rule fires) do not run under trl grpo",
    ),
}
_SKIP = {
    "trainer",
    "rl_env_module",
    "rl_env_class",
    "rl_env_config",
    "dataset",
    "dataset_config",
    "dataset_split",
    "reward_funcs",
    "mixed_precision",
    "report_to",
    "target_modules",
    "warmup_ratio",
    "grpo_args",
    "model",
    *("eval_dataset", "eval_split", "eval_steps", "eval_generations", "eval_batch_size", "eval_on_start"),
}
ENV_RUN_MESSAGE = (
    "this run trains on an environment class ({module}:{cls}), and TRL's `trl grpo` CLI has no environment "
    "concept: its recipes name a dataset and reward functions. Use TRL's Python API instead: "
    "GRPOTrainer(model=..., reward_funcs=[...], train_dataset=env.build_dataset(tokenizer), args=GRPOConfig(...)), "
    "or keep the run in grpo-tui (grpo-tui export RUN --format grpo-tui)."
)


def _dataset_keys(config: RunConfig) -> dict:
    spec = config.dataset or ""
    suffix = Path(spec).suffix.lower()
    builder = next((b for b, suffixes in FILE_BUILDERS.items() if suffix in suffixes), None)
    if builder:  # a file: TRL's `datasets` list reads it with the file's builder, as one 'train' split
        entry = {"path": builder, "data_files": spec, "split": config.dataset_split}
        return {"datasets": [entry], "dataset_train_split": "train"}
    keys: dict[str, Any] = {"dataset_name": spec, "dataset_train_split": config.dataset_split}
    if config.dataset_config:
        keys["dataset_config"] = config.dataset_config
    return keys


def _reward_names(config: RunConfig, notes: list[str]) -> list[str]:
    names = []
    for name in config.reward_funcs:
        if reward_func_kind(name) == "file":
            path, _, func = name.rpartition(":")
            file = Path(path)
            names.append(f"{file.stem}.{func}")
            notes.append(
                f"reward function {name} becomes '{file.stem}.{func}': TRL imports dotted paths from the "
                f"current folder, so run trl grpo from {file.parent.resolve()} (or put {file.name} on PYTHONPATH)."
            )
        elif (ref := parse_code_ref(name)) is not None and ref.module and ":" in name:
            names.append(f"{ref.module}.{ref.names[0]}")  # TRL imports a dotted path, not pkg.module:fn
        else:
            names.append(name)
    return names


def _precision(setting: str, notes: list[str]) -> dict:
    if setting == "bf16":
        return {"bf16": True}
    if setting == "fp16":
        return {"bf16": False, "fp16": True}
    if setting == "no":
        return {"bf16": False, "fp16": False}
    notes.append(
        "mixed_precision 'auto' (bf16 where the GPU supports it, off on CPU) has no TRL key; TRL's default is "
        "bf16, so set bf16: false to train on a CPU."
    )
    return {}


def to_recipe(config: RunConfig) -> tuple[dict, list[str]]:
    """The `trl grpo` recipe for a dataset run, and notes on the settings TRL has no key for.

    Raises ConfigError for an environment run (TRL's CLI has no environment concept)."""
    if config.rl_env_module or config.rl_env_class:
        raise ConfigError("rl_env_module", ENV_RUN_MESSAGE.format(module=config.rl_env_module, cls=config.rl_env_class))
    if not config.dataset or not config.reward_funcs:
        raise ConfigError(
            "dataset",
            "only a run with a dataset and reward functions can become a trl grpo recipe; this config has none.",
        )
    notes: list[str] = []
    recipe: dict[str, Any] = {"model_name_or_path": config.model, **_dataset_keys(config)}
    recipe["reward_funcs"] = _reward_names(config, notes)
    recipe["reward_weights"] = [float(w) for w in config.reward_funcs.values()]
    ours = {field: key for key, field in RENAMED.items() if field not in _SKIP}
    ours.update({name: name for name in SAME_NAME if name not in NOT_IN_TRL and name not in _SKIP})
    for f in dataclasses.fields(RunConfig):
        if f.name in ours:
            value = getattr(config, f.name)
            if value is not None or f.name not in ("vllm_server_url", "save_total_limit", "dataset_config"):
                recipe[ours[f.name]] = value
    recipe["warmup_steps"] = config.warmup_ratio  # transformers 5: a value below 1 is a fraction of the steps
    recipe.update(_evaluation_keys(config, notes))
    recipe.update(_precision(config.mixed_precision, notes))
    recipe["report_to"] = trackers(config) or "none"
    if config.name:
        recipe["run_name"] = config.name  # the trackers' name for the run, as grpo-tui's name is its own
    if config.peft:
        targets = config.target_modules
        recipe["lora_target_modules"] = (
            targets if targets == "all-linear" else [t.strip() for t in targets.split(",") if t.strip()]
        )
    if "dtype" not in (config.grpo_args.get("model_init_kwargs") or {}):
        recipe["dtype"] = "auto"  # the checkpoint's dtype, as grpo-tui loaded it (trl grpo alone would use float32)
    if "gradient_checkpointing" in recipe:  # transformers 5's name; the old one is a deprecated alias
        recipe["activation_checkpointing"] = recipe.pop("gradient_checkpointing")
    recipe.update(config.grpo_args)
    _left_out(config, notes)
    return _current(recipe, notes), notes


def _evaluation_keys(config: RunConfig, notes: list[str]) -> dict:
    """The held-out evaluation as TRL's eval keys: a split of the run's own dataset, every eval_steps."""
    if not config.eval_dataset:
        return {}
    if config.eval_dataset != config.dataset:
        notes.append(
            f"eval_dataset: {config.eval_dataset!r} is left out: trl grpo evaluates a split of the training "
            "dataset only (dataset_test_split)."
        )
        return {}
    return {
        "eval_strategy": "steps",
        "eval_steps": config.eval_steps or config.save_steps,
        "dataset_test_split": config.eval_split or "test",
        "num_generations_eval": config.eval_generations,
        "per_device_eval_batch_size": config.eval_batch_size,
        "eval_on_start": config.eval_on_start,
    }


def _left_out(config: RunConfig, notes: list[str]) -> None:
    """Notes for the settings that differ from grpo-tui's defaults and that trl grpo has no key for."""
    defaults = RunConfig()
    for row in RETIRED_KEYS:
        if row.kind == "honoured" and getattr(config, row.becomes) != getattr(defaults, row.becomes):
            notes.append(
                f"{row.becomes}: {shown(getattr(config, row.becomes))} is left out: trl grpo has no key for it "
                f"({row.key}: {row.release}); {row.instead}."
            )
    for name, why in NOT_IN_TRL.items():
        value = getattr(config, name)
        if value != getattr(defaults, name):
            notes.append(f"{name}: {value!r} is left out: {why}.")


def _current(recipe: dict, notes: list[str]) -> dict:
    """The recipe in current TRL keys: a retired one (from grpo_args) under its new name, or left out."""
    out: dict[str, Any] = {}
    for key, value in recipe.items():
        row = BY_KEY.get(key)
        if row is None:
            out[key] = value
        elif row.kind == "renamed" and row.becomes not in recipe:
            out[row.becomes] = value
            notes.append(f"{key} is written as {row.becomes} ({row.release}).")
        else:
            notes.append(f"{key}: {shown(value)} is left out: trl grpo no longer has it ({row.release}).")
    return out


def recipe_text(config: RunConfig, run_id: str | None = None) -> tuple[str, list[str]]:
    """The recipe as YAML, its header saying where it came from and what it leaves out; and those notes."""
    import yaml

    recipe, notes = to_recipe(config)
    header = [
        f"# trl grpo recipe exported by grpo-tui{f' from run {run_id}' if run_id else ''}",
        "# run it with: trl grpo --config THIS_FILE",
    ]
    if notes:
        header.append("# not carried over:")
        header += [f"#   - {note}" for note in notes]
    return "\n".join(header) + "\n" + yaml.safe_dump(recipe, sort_keys=False), notes


def own_config_text(config: RunConfig) -> str:
    """grpo-tui's own config for the run, ready for ``--config`` (without the inspection it was gated by)."""
    import yaml

    data = config.to_dict()
    data.pop("inspection", None)
    return yaml.safe_dump(data, sort_keys=False)
