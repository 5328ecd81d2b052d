"""TRL recipes out: `grpo-tui export --format trl` parsed back by TRL's own parser (the one `trl grpo --config`
uses) without unknown keys, into the same RunConfig; what TRL has no key for is reported; environment runs
are refused with the way to the Python API."""

from __future__ import annotations

import argparse
import dataclasses
import warnings

import pytest
import yaml

from grpo_tui.config_flags import add_run_config_arguments, config_from_args
from grpo_tui.services.trl_export import recipe_text, to_recipe
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.recipes.keys import BY_KEY

from ..helpers import cli


def parse(argv):
    parser = argparse.ArgumentParser()
    add_run_config_arguments(parser)
    return config_from_args(parser.parse_args(argv), notes=[])


ROUND_TRIP = [
    RunConfig(
        model="org/tiny",
        project_name="recipes",
        dataset="data/train.jsonl",
        reward_funcs={"think_format_reward": 1.0, "my_rewards.correct": 2.0},
        lr=3e-6,
        rl_num_generations=4,
        batch_size=8,
        rl_kl_coef=0.05,
        rl_clip_range=0.3,
        rl_max_new_tokens=64,
        rl_temperature=0.8,
        rl_top_p=0.95,
        rl_top_k=20,
        rl_loss_type="dr_grpo",
        rl_mask_truncated_completions=True,
        gradient_accumulation=2,
        max_steps=30,
        epochs=2,
        seed=7,
        logging_steps=2,
        save_steps=10,
        save_total_limit=2,
        mixed_precision="no",
        report_to="tensorboard",
        warmup_ratio=0.1,
        scheduler="cosine",
        peft=True,
        lora_r=8,
        lora_alpha=16,
        lora_dropout=0.1,
        target_modules="q_proj,v_proj",
        grpo_args={"max_grad_norm": 0.5},
    ),
    RunConfig(
        model="org/tiny",
        dataset="trl-lib/DeepMath-103K",
        dataset_config="default",
        dataset_split="train[:100]",
        reward_funcs={"accuracy_reward": 1.0},
        mixed_precision="no",
        gradient_checkpointing=True,
        use_vllm=True,
        vllm_mode="server",
        vllm_server_url="http://127.0.0.1:8000",
        report_to="tensorboard,wandb",
    ),
]


@pytest.mark.parametrize("config", ROUND_TRIP, ids=["file-dataset", "hub-dataset"])
def test_export_parses_with_trls_parser_and_round_trips(config, tmp_path):
    from trl import GRPOConfig, ModelConfig  # pyright: ignore[reportPrivateImportUsage]
    from trl.scripts.grpo import GRPOScriptArguments, make_parser

    text, notes = recipe_text(config, "run-1")
    assert notes == []
    assert "activation_checkpointing" in yaml.safe_load(text) and "gradient_checkpointing" not in yaml.safe_load(text)
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*gradient_checkpointing.*deprecated", category=FutureWarning)
        *parsed, config_left, cli_left = make_parser().parse_args_and_config(
            ["--config", str(path)], return_remaining_strings=True, separate_remaining_strings=True
        )
    assert config_left == [] and cli_left == [], "keys trl grpo does not know"
    script, training, model, mixture = parsed
    if "datasets" not in yaml.safe_load(text):  # the triple parses it too
        from trl import TrlParser  # pyright: ignore[reportPrivateImportUsage]

        parser = TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig))  # pyright: ignore[reportArgumentType]
        parser.parse_args_and_config(["--config", str(path)])
    assert model.model_name_or_path == config.model and script.reward_funcs == list(config.reward_funcs)
    assert training.reward_weights == list(config.reward_funcs.values())
    assert (training.learning_rate, training.beta, training.epsilon, training.num_generations) == (
        config.lr,
        config.rl_kl_coef,
        config.rl_clip_range,
        config.rl_num_generations,
    )
    assert (training.max_completion_length, training.per_device_train_batch_size, training.seed) == (
        config.rl_max_new_tokens,
        config.batch_size,
        config.seed,
    )
    assert training.gradient_checkpointing == config.gradient_checkpointing and training.bf16 is False
    assert training.report_to == config.report_to.split(",")
    assert model.use_peft == config.peft
    if config.peft:
        assert model.lora_target_modules == config.target_modules.split(",")
    if mixture.datasets:
        assert (mixture.datasets[0].path, mixture.datasets[0].data_files) == ("json", config.dataset)
    else:
        assert (script.dataset_name, script.dataset_config) == (config.dataset, config.dataset_config)
    assert parse(["--config", str(path)]) == config


def test_export_reports_what_trl_has_no_key_for():
    config = ROUND_TRIP[0]
    recipe, notes = to_recipe(
        dataclasses.replace(
            config,
            stop_on="kl_explosion",
            system_prompt="Be brief.",
            reward_funcs={"rewards/score.py:score": 1.0},
            mixed_precision="auto",
            remedy={"non_finite": "rollback"},
            max_remedies=3,
        )
    )
    assert recipe["reward_funcs"] == ["score.score"]
    assert not {"remedy", "max_remedies", "remedy_lr_scale"} & set(recipe)
    text = "\n".join(notes)
    assert "stop_on" in text and "system_prompt" in text and "run trl grpo from" in text and "bf16: false" in text
    assert "remedy: {'non_finite': 'rollback'} is left out: grpo-tui's remedies" in text and "max_remedies: 3" in text


def test_export_writes_no_retired_key():
    config = dataclasses.replace(
        ROUND_TRIP[0],
        grpo_args={"use_liger_loss": True, "vllm_device": "auto"},
        system_prompt="Be brief.",
        max_prompt_length=256,
        prompt_column="problem",
    )
    recipe, notes = to_recipe(config)
    assert not set(recipe) & set(BY_KEY)
    assert recipe["use_liger_kernel"] is True and recipe["warmup_steps"] == config.warmup_ratio
    text = "\n".join(notes)
    assert "use_liger_loss is written as use_liger_kernel" in text and "vllm_device: 'auto' is left out" in text
    for field, instead in (
        ("system_prompt", "system message"),
        ("max_prompt_length", "long prompts"),
        ("prompt_column", "column to 'prompt'"),
    ):
        assert f"{field}: " in text and instead in text, field


def test_export_command(tmp_path, runs_dir):
    from trainer_core.contract.run.folder import RunFolder

    env_run = RunFolder.create(runs_dir)
    RunConfig(model="m", rl_env_module="e.py", rl_env_class="E").save(env_run.config_file)
    result = cli("export", env_run.run_id, "--format", "trl", "--runs-dir", str(runs_dir))
    assert result.returncode == 2
    assert "no environment concept" in result.stderr and "Python API" in result.stderr
    own = cli("export", env_run.run_id, "--format", "grpo-tui", "--runs-dir", str(runs_dir))
    assert own.returncode == 0 and RunConfig.from_dict(yaml.safe_load(own.stdout)) == RunConfig.load(
        env_run.config_file
    )
    # the default exports every run: an environment run as grpo-tui's config, saying why
    default = cli("export", env_run.run_id, "--runs-dir", str(runs_dir))
    assert default.returncode == 0, default.stderr
    assert default.stdout == own.stdout
    assert "not a dataset + reward-functions run" in default.stderr and "grpo-tui train --config" in default.stderr
    data_run = RunFolder.create(runs_dir)
    ROUND_TRIP[1].save(data_run.config_file)
    out = tmp_path / "exported.yaml"
    result = cli("export", data_run.run_id, "--output", str(out), "--runs-dir", str(runs_dir))
    assert result.returncode == 0, result.stderr
    assert out.read_text().startswith(f"# trl grpo recipe exported by grpo-tui from run {data_run.run_id}")
    assert yaml.safe_load(out.read_text())["dataset_name"] == "trl-lib/DeepMath-103K"


def test_a_module_colon_function_reward_is_written_as_the_dotted_path_trl_imports():
    from grpo_tui.services.trl_export import recipe_text

    config = RunConfig(model="org/tiny", dataset="data/train.jsonl", reward_funcs={"my_pkg.rewards:correct": 1.0})
    text, _ = recipe_text(config, "r1")
    assert yaml.safe_load(text)["reward_funcs"] == ["my_pkg.rewards.correct"]
