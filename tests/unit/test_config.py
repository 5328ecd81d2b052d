"""RunConfig: defaults of the GRPO interface, validation messages, files, flags and --help."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

import pytest
import yaml

from grpo_tui.config_flags import add_run_config_arguments, config_from_args, config_to_argv
from trainer_core.contract.config.run_config import ConfigError, RunConfig, config_fields, flag_for

from ..helpers import ROOT, cli

VALID: dict[str, Any] = dict(model="m", rl_env_module="env.py", rl_env_class="Env")


def parse(argv):
    parser = argparse.ArgumentParser()
    add_run_config_arguments(parser)
    return config_from_args(parser.parse_args(argv))


def error_of(**changes) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        RunConfig(**{**VALID, **changes}).validate()
    return info.value


def test_defaults_follow_the_grpo_interface():
    c = RunConfig()
    expected = dict(
        project_name="grpo-run",
        trainer="grpo",
        rl_env_config=None,
        rl_num_generations=4,
        rl_loss_type="grpo",
        rl_mask_truncated_completions=False,
        use_vllm=False,
        vllm_mode="colocate",
        vllm_gpu_memory_utilization=0.3,
        vllm_server_url=None,
        vllm_tensor_parallel_size=1,
        vllm_server_gpus=1,
        rl_kl_coef=0.1,
        rl_clip_range=0.2,
        rl_max_new_tokens=128,
        rl_top_k=50,
        rl_top_p=1.0,
        rl_temperature=1.0,
        epochs=1,
        batch_size=4,
        lr=1e-5,
        peft=False,
        lora_r=16,
        lora_alpha=32,
        logging_steps=1,
        report_to="none",
        mixed_precision="auto",
    )
    assert {k: getattr(c, k) for k in expected} == expected
    assert all(f.metadata.get("help") for f in config_fields())


def test_a_valid_config_passes():
    config = RunConfig(**VALID)
    assert config.validate() is config  # returns itself, so calls can chain
    assert config.problems() == []


def test_missing_environment_names_both_flags():
    exc = error_of(rl_env_module=None)
    assert "GRPO requires --rl-env-module and --rl-env-class" in str(exc)
    assert exc.field == "rl_env_module"
    assert "rl_env_class" in str(error_of(rl_env_class=""))


@pytest.mark.parametrize("value", ["[1, 2]", "not json", '"text"', "3"])
def test_env_config_must_be_a_json_object(value):
    exc = error_of(rl_env_config=value)
    assert exc.field == "rl_env_config"
    assert "JSON object" in str(exc) and "--rl-env-config" in str(exc)


def test_env_config_json_string_becomes_kwargs():
    assert parse(["--rl-env-config", '{"max_turns": 3}']).rl_env_config == {"max_turns": 3}


def test_unknown_loss_type_and_vllm_mode_list_valid_values():
    exc = error_of(rl_loss_type="ppo")
    assert "'ppo'" in str(exc) and "grpo, dr_grpo, dapo, bnpo, cispo, sapo" in str(exc)
    exc = error_of(vllm_mode="remote")
    assert exc.field == "vllm_mode" and "colocate, server" in str(exc)


def test_num_generations_below_two():
    exc = error_of(rl_num_generations=1, batch_size=4)
    assert exc.field == "rl_num_generations" and "at least 2" in str(exc)


def test_batch_not_divisible_by_num_generations_explains_the_product():
    exc = error_of(batch_size=6, rl_num_generations=4)
    assert exc.field == "batch_size"
    assert "6" in str(exc) and "divisible by rl_num_generations (4)" in str(exc)
    RunConfig(**VALID, batch_size=2, rl_num_generations=4, gradient_accumulation=2).validate()
    with pytest.raises(ConfigError, match=r"processes \(3\)"):
        RunConfig(**VALID, batch_size=2, rl_num_generations=4).validate(world_size=3)


def test_server_mode_needs_url_or_gpus():
    exc = error_of(use_vllm=True, vllm_mode="server", vllm_server_gpus=0)
    assert "--vllm-server-url" in str(exc) and "--vllm-server-gpus" in str(exc)
    RunConfig(
        **VALID, use_vllm=True, vllm_mode="server", vllm_server_gpus=0, vllm_server_url="http://127.0.0.1:8000"
    ).validate()


@pytest.mark.parametrize(
    "field,value",
    [
        ("rl_temperature", 0),
        ("rl_top_p", 0),
        ("rl_top_p", 1.5),
        ("rl_top_k", -1),
        ("vllm_gpu_memory_utilization", 1.2),
        ("rl_kl_coef", -0.1),
        ("lr", float("nan")),
    ],
)
def test_sampling_and_numeric_ranges(field, value):
    exc = error_of(**{field: value})
    assert exc.field == field and repr(value) in str(exc)


def test_problems_lists_everything_at_once():
    # a config file or a flag can hold any text: the checks catch what the Literal type cannot
    problems = RunConfig(rl_loss_type="x", rl_temperature=-1).problems()  # pyright: ignore[reportArgumentType]
    assert {p.field for p in problems} >= {"rl_env_module", "model", "rl_loss_type", "rl_temperature"}


def test_unknown_file_key_suggests_the_closest(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model: m\nrl_num_generation: 8\n")
    with pytest.raises(ConfigError, match=r"unknown key 'rl_num_generation'.*Did you mean 'rl_num_generations'"):
        RunConfig.load(path)
    path.write_text("model: m\nzzz_unrelated: 1\n")
    with pytest.raises(ConfigError, match="grpo_args"):
        RunConfig.load(path)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_round_trip_through_files(tmp_path, suffix):
    original = RunConfig(
        **VALID,
        rl_env_config={"max_turns": 2},
        peft=True,
        lr=3e-4,
        grpo_args={"max_grad_norm": 0.5},
        max_prompt_length=64,
    )
    path = original.save(tmp_path / f"run{suffix}")
    text = path.read_text()
    (yaml.safe_load if suffix == ".yaml" else json.loads)(text)
    assert RunConfig.load(path) == original


def test_flags_override_file(tmp_path):
    path = RunConfig(**VALID, lr=0.1, rl_num_generations=8, peft=True).save(tmp_path / "c.yaml")
    config = parse(["--config", str(path), "--lr", "0.5", "--no-peft", "--grpo-arg", "max_grad_norm=0.3"])
    assert (config.lr, config.rl_num_generations, config.peft) == (0.5, 8, False)
    assert config.grpo_args == {"max_grad_norm": 0.3}


def test_argv_reproduces_the_config():
    original = RunConfig(**VALID, rl_env_config={"a": [1]}, use_vllm=True, max_prompt_length=32, grpo_args={"x": "y"})
    assert parse(config_to_argv(original)) == original


def test_help_lists_every_flag_with_its_default():
    out = cli("train", "--help").stdout
    flat = " ".join(out.split())
    for f in config_fields():
        assert flag_for(f) in out, f.name
    assert "--rl-kl-coef" in out and "(default: 0.1)" in flat
    assert "One of: grpo, dr_grpo, dapo, bnpo, cispo, sapo" in flat


def test_cli_rejects_bad_config_before_any_heavy_import(runs_dir):
    code = (
        "import sys; from grpo_tui.cli import main; rc = main(sys.argv[1:]); "
        "heavy = [m for m in ('torch', 'transformers', 'trl', 'datasets', 'peft') if m in sys.modules]; "
        "print('HEAVY', heavy, file=sys.stderr); sys.exit(rc)"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "train",
            "--model",
            "m",
            "--rl-env-module",
            "e",
            "--rl-env-class",
            "E",
            "--rl-loss-type",
            "ppo",
            "--runs-dir",
            str(runs_dir),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert "rl_loss_type must be one of grpo, dr_grpo" in result.stderr
    assert "HEAVY []" in result.stderr
    assert not runs_dir.exists()


def test_cli_missing_env_message():
    result = cli("train", "--model", "m")
    assert result.returncode == 2
    assert "GRPO requires --rl-env-module and --rl-env-class" in result.stderr


def test_configuration_reference_is_current():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_ref", ROOT / "docs" / "make_config_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "docs" / "configuration.md").read_text() == module.render(), (
        "run python docs/make_config_reference.py"
    )
