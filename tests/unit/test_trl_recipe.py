"""TRL recipes in: every key mapped, passed through or reported, unknown keys with the closest known one, TRL's
defaults for what a recipe leaves out, flags over the file, and the rules of a dataset + reward-functions run."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest
import yaml

from grpo_tui.config_flags import add_run_config_arguments, config_from_args, config_to_argv
from trainer_core.contract.config.inspection_key import config_key
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.config.trl_names import (
    GRPO_CONFIG_FIELDS,
    MIXTURE_FIELDS,
    MODEL_CONFIG_FIELDS,
    RENAMED,
    SAME_NAME,
    SCRIPT_FIELDS,
    TRL_DEFAULTS,
    TRL_REWARD_FUNCS,
    TRL_UNHONOURED_DEFAULTS,
)
from trainer_core.contract.recipes.keys import BY_KEY
from trainer_core.contract.recipes.reader import IGNORED, SPECIAL, UNSUPPORTED, is_recipe, recipe_to_fields

from ..helpers import cli

# open-r1's recipes/DeepSeek-R1-Distill-Qwen-1.5B/grpo/config_demo.yaml, key for key
OPEN_R1_DEMO = {
    "model_name_or_path": "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
    "model_revision": "main",
    "torch_dtype": "bfloat16",
    "attn_implementation": "flash_attention_2",
    "dataset_name": "open-r1/OpenR1-Math-220k",
    "dataset_prompt_column": "problem",
    "system_prompt": "Respond as <think>\n...\n</think>\n<answer>\n...\n</answer>",
    "seed": 42,
    "bf16": True,
    "use_vllm": True,
    "do_eval": False,
    "gradient_accumulation_steps": 4,
    "gradient_checkpointing": True,
    "gradient_checkpointing_kwargs": {"use_reentrant": False},
    "hub_model_id": "DeepSeek-R1-Distill-Qwen-1.5B-GRPO",
    "hub_strategy": "every_save",
    "learning_rate": 2.0e-05,
    "log_completions": True,
    "log_level": "info",
    "logging_first_step": True,
    "logging_steps": 1,
    "logging_strategy": "steps",
    "lr_scheduler_type": "cosine",
    "max_prompt_length": 512,
    "max_completion_length": 1024,
    "max_steps": -1,
    "num_generations": 16,
    "num_train_epochs": 1,
    "output_dir": "data/DeepSeek-R1-Distill-Qwen-1.5B-GRPO",
    "overwrite_output_dir": True,
    "per_device_eval_batch_size": 16,
    "per_device_train_batch_size": 16,
    "push_to_hub": True,
    "report_to": ["wandb"],
    "reward_funcs": ["accuracy_reward", "think_format_reward"],
    "reward_weights": [1.0, 0.5],
    "save_strategy": "epoch",
    "save_total_limit": 1,
    "temperature": 0.7,
    "warmup_ratio": 0.1,
}


def parse(argv, notes=None):
    parser = argparse.ArgumentParser()
    add_run_config_arguments(parser)
    return config_from_args(parser.parse_args(argv), notes=notes)


def write(tmp_path, data, name="recipe.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_key_lists_match_the_installed_trl():
    from trl import GRPOConfig, ModelConfig, rewards  # pyright: ignore[reportPrivateImportUsage]
    from trl.scripts.grpo import GRPOScriptArguments
    from trl.scripts.utils import DatasetMixtureConfig

    for names, cls in (
        (SCRIPT_FIELDS, GRPOScriptArguments),
        (GRPO_CONFIG_FIELDS, GRPOConfig),
        (MODEL_CONFIG_FIELDS, ModelConfig),
        (MIXTURE_FIELDS, DatasetMixtureConfig),
    ):
        assert set(names) == {f.name for f in dataclasses.fields(cls)}, f"update config/trl_names.py for {cls.__name__}"
    defaults = {}
    for cls in (GRPOScriptArguments, GRPOConfig, ModelConfig, DatasetMixtureConfig):
        defaults.update({f.name: f.default for f in dataclasses.fields(cls)})
    for name, value in {**TRL_DEFAULTS, **TRL_UNHONOURED_DEFAULTS}.items():
        if name in defaults:
            assert defaults[name] == value, name
    for name in TRL_REWARD_FUNCS:
        assert callable(getattr(rewards, name)), name


def test_every_recipe_key_has_one_way_in():
    ours = {f.name for f in dataclasses.fields(RunConfig)}
    assert set(RENAMED.values()) <= ours and set(SAME_NAME) <= ours
    handled = set(RENAMED) | set(SAME_NAME) | set(SPECIAL) | set(IGNORED) | set(UNSUPPORTED)
    assert not set(IGNORED) & set(UNSUPPORTED)
    assert not set(BY_KEY) & handled, "a retired key is read through recipe_keys.RETIRED_KEYS only"
    # a key TRL and grpo-tui share must be mapped on purpose, never taken as grpo-tui's by accident
    shared = ours & (set(GRPO_CONFIG_FIELDS) | set(MODEL_CONFIG_FIELDS) | set(SCRIPT_FIELDS))
    assert shared <= handled


def test_open_r1_demo_recipe_maps_every_key(tmp_path):
    notes = []
    config = parse(["--config", str(write(tmp_path, OPEN_R1_DEMO))], notes)
    assert (config.model, config.dataset, config.prompt_column) == (
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
        "open-r1/OpenR1-Math-220k",
        "problem",
    )
    assert (config.system_prompt or "").startswith("Respond as <think>")
    assert (config.lr, config.rl_num_generations, config.rl_max_new_tokens, config.rl_temperature) == (
        2e-5,
        16,
        1024,
        0.7,
    )
    assert (config.batch_size, config.gradient_accumulation, config.epochs, config.scheduler) == (16, 4, 1, "cosine")
    assert (config.mixed_precision, config.use_vllm, config.gradient_checkpointing) == ("bf16", True, True)
    assert (config.logging_steps, config.save_total_limit, config.warmup_ratio, config.max_prompt_length) == (
        1,
        1,
        0.1,
        512,
    )
    assert config.report_to == "wandb"
    assert config.reward_funcs == {"accuracy_reward": 1.0, "think_format_reward": 0.5}
    # left out of the recipe: TRL's defaults, not grpo-tui's
    assert (config.rl_kl_coef, config.rl_loss_type, config.rl_top_k, config.save_steps) == (0.0, "dapo", 0, 500)
    assert config.grpo_args == {
        "gradient_checkpointing_kwargs": {"use_reentrant": False},
        "log_completions": True,
        "log_level": "info",
        "logging_first_step": True,
        "model_init_kwargs": {"dtype": "bfloat16", "attn_implementation": "flash_attention_2"},
    }
    text = "\n".join(notes)
    for key in (
        "hub_model_id",
        "push_to_hub",
        "output_dir",
        "overwrite_output_dir",
        "per_device_eval_batch_size",
        "save_strategy",
        "max_prompt_length",
    ):
        assert f"{key}:" in text, key
    assert "do_eval" not in text and "hub_strategy" not in text  # left at TRL's default: nothing to report
    assert config.problems() == []


def test_unknown_key_names_the_closest_known_one(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown key 'lerning_rate'.*Did you mean 'learning_rate'") as info:
        parse(["--config", str(write(tmp_path, {"model_name_or_path": "m", "lerning_rate": 1e-5}))])
    assert info.value.field == "lerning_rate"
    with pytest.raises(ConfigError, match=r"unknown key 'num_generation'.*Did you mean 'num_generations'"):
        recipe_to_fields({"model_name_or_path": "m", "num_generation": 8})


def test_unsupported_key_is_an_error_unless_left_at_trl_default():
    with pytest.raises(ConfigError, match=r"load_in_4bit: True.*cannot honour: quantised") as info:
        recipe_to_fields({"model_name_or_path": "m", "load_in_4bit": True})
    assert info.value.field == "load_in_4bit"
    with pytest.raises(ConfigError, match="use_dora"):
        recipe_to_fields({"model_name_or_path": "m", "use_dora": True})
    fields, notes = recipe_to_fields(
        {"model_name_or_path": "m", "load_in_4bit": False, "use_dora": False, "push_to_hub": False, "dtype": "auto"}
    )
    assert notes == [] and "grpo_args" not in fields
    with pytest.raises(ConfigError, match="mixes 2 datasets"):
        recipe_to_fields({"model_name_or_path": "m", "datasets": [{"path": "a"}, {"path": "b"}]})


def test_other_grpo_config_fields_pass_through_unchanged():
    fields, notes = recipe_to_fields(
        {
            "model_name_or_path": "m",
            "max_grad_norm": 0.3,
            "scale_rewards": "batch",
            "lr_scheduler_kwargs": {"min_lr_rate": 0.1},
            "warmup_steps": 20,
        }
    )
    assert fields["grpo_args"] == {
        "max_grad_norm": 0.3,
        "scale_rewards": "batch",
        "lr_scheduler_kwargs": {"min_lr_rate": 0.1},
        "warmup_steps": 20,
        "model_init_kwargs": {"dtype": "float32"},
    }
    assert notes == []
    # the model's dtype as trl grpo loads it: float32 unless the recipe says otherwise ('auto': the checkpoint's)
    assert "grpo_args" not in recipe_to_fields({"model_name_or_path": "m", "dtype": "auto"})[0]


def test_dataset_forms_and_reward_weights():
    fields, _ = recipe_to_fields(
        {
            "model_name_or_path": "m",
            "reward_funcs": "think_format_reward",
            "datasets": [{"path": "json", "data_files": ["d/train.jsonl"], "split": "train[:50]"}],
        }
    )
    assert (fields["dataset"], fields["dataset_split"], fields["reward_funcs"]) == (
        "d/train.jsonl",
        "train[:50]",
        {"think_format_reward": 1.0},
    )
    with pytest.raises(ConfigError, match="one weight per reward function") as info:
        recipe_to_fields({"model_name_or_path": "m", "reward_funcs": ["a.b", "c.d"], "reward_weights": [1.0]})
    assert info.value.field == "reward_weights"


def test_detection_and_format_flag(tmp_path):
    assert is_recipe({"model_name_or_path": "m"}) and not is_recipe({"model": "m", "lr": 1e-5})
    assert not is_recipe({"seed": 1})  # nothing only TRL has: grpo-tui's own fields
    mixed = write(tmp_path, {"model": "m", "learning_rate": 1e-5, "rl_env_module": "e.py", "rl_env_class": "E"})
    with pytest.raises(ConfigError, match=r"'learning_rate' is a trl grpo recipe key; here it is 'lr'.*--format trl"):
        parse(["--config", str(mixed)])
    config = parse(["--config", str(mixed), "--format", "trl"])
    assert (config.model, config.lr, config.rl_num_generations) == ("m", 1e-5, 8)
    with pytest.raises(ConfigError, match=r"both 'learning_rate' \(TRL\) and 'lr'"):
        recipe_to_fields({"model_name_or_path": "m", "learning_rate": 1e-5, "lr": 1e-4})


def test_flags_override_the_recipe(tmp_path):
    path = write(tmp_path, {**OPEN_R1_DEMO, "report_to": "none"})
    config = parse(
        [
            "--config",
            str(path),
            "--lr",
            "0.5",
            "--mixed-precision",
            "no",
            "--reward-func",
            "rewards.py:f=2",
            "--rl-num-generations",
            "4",
            "--grpo-arg",
            "log_level=warning",
        ]
    )
    assert (config.lr, config.mixed_precision, config.rl_num_generations) == (0.5, "no", 4)
    assert config.reward_funcs == {"accuracy_reward": 1.0, "think_format_reward": 0.5, "rewards.py:f": 2.0}
    assert config.grpo_args["log_level"] == "warning" and config.grpo_args["log_completions"] is True
    assert (
        parse(["--config", str(path), "--reward-func", "think_format_reward=0"]).reward_funcs["think_format_reward"]
        == 0
    )


def test_dataset_run_rules():
    ok = RunConfig(
        model="m",
        dataset="d.jsonl",
        reward_funcs={"think_format_reward": 1.0, "pkg.mod.fn": 0.5, "my rewards.py:score": 2},
    )
    assert ok.problems() == []
    both = RunConfig(
        model="m", dataset="d.jsonl", reward_funcs={"think_format_reward": 1}, rl_env_module="e.py", rl_env_class="E"
    )
    assert "not both" in str(both.problems()[0])
    problems = RunConfig(
        model="m", dataset="d.jsonl", reward_funcs={"think_format": 1, "x.py:f": float("nan")}
    ).problems()
    assert "Did you mean 'think_format_reward'" in str(problems[0])
    assert "weight of reward function 'x.py:f' must be a finite number" in str(problems[1])
    assert "at least one reward function" in str(RunConfig(model="m", dataset="d.jsonl").problems()[0])
    assert "dataset is not" in str(RunConfig(model="m", reward_funcs={"a.b": 1}).problems()[0])
    # grpo-tui's own format takes a list of names too, and --reward-func flags reproduce the mapping
    assert RunConfig.from_dict({"model": "m", "reward_funcs": ["a.b", "c.d"]}).reward_funcs == {"a.b": 1.0, "c.d": 1.0}
    assert parse(config_to_argv(ok)) == ok


def test_inspection_key_of_an_environment_run_is_unchanged():
    import hashlib

    env = RunConfig(model="m", rl_env_module="e.py", rl_env_class="E")
    old_fields = (
        "model",
        "rl_env_module",
        "rl_env_class",
        "rl_env_config",
        "rl_num_generations",
        "rl_max_new_tokens",
        "rl_temperature",
        "rl_top_p",
        "rl_top_k",
        "max_prompt_length",
    )
    old = hashlib.sha256(json.dumps({n: getattr(env, n) for n in old_fields}, sort_keys=True, default=str).encode())
    assert config_key(env) == old.hexdigest()[:16]
    data = RunConfig(model="m", dataset="a.jsonl", reward_funcs={"think_format_reward": 1.0})
    assert config_key(data) != config_key(
        RunConfig(model="m", dataset="b.jsonl", reward_funcs={"think_format_reward": 1.0})
    )


def test_recipe_warnings_reach_the_command_line(tmp_path):
    path = write(
        tmp_path,
        {**OPEN_R1_DEMO, "model_name_or_path": str(tmp_path / "missing-model"), "report_to": "none", "use_vllm": False},
    )
    result = cli("launch", "--dry-run", "--config", str(path))
    assert "warning: " in result.stderr and "push_to_hub: True is ignored" in result.stderr
    assert "model '" in result.stderr  # the dry run still checks the files the recipe names


def test_the_example_recipe_is_a_valid_run(tmp_path):
    from ..helpers import EXAMPLES

    notes = []
    config = parse(["--config", str(EXAMPLES / "recipes" / "cpu_demo.yaml"), "--model", "m"], notes)
    assert config.problems() == []
    assert config.dataset == "examples/recipes/letters.jsonl" and len(config.reward_funcs) == 2
    assert [n.split(":")[0] for n in notes] == ["output_dir"]
