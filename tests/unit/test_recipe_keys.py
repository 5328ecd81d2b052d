"""Recipes of every vintage: each row of the retired-key table (renamed, honoured, ignored) read as it says, with
its note; ``strict`` refusing the ignored ones; an unknown key still an error; the table in docs/recipes.md; and
open-r1's early-2025 recipe read key for key."""

from __future__ import annotations

import argparse
import dataclasses

import pytest
import yaml

from grpo_tui.config_flags import add_run_config_arguments, config_from_args
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.config.trl_names import TRL_FIELDS
from trainer_core.contract.recipes.keys import BY_KEY, RETIRED_KEYS, markdown_table
from trainer_core.contract.recipes.reader import RECIPE_KEYS, recipe_to_fields

from ..helpers import EXAMPLES, ROOT

BASE = {"model_name_or_path": "m"}
# One value per row: a renamed key reads as its new key with the second value, a honoured key sets its grpo-tui field
# to the value, an ignored key changes nothing. Every row of the table must have one (see the first test).
VALUES = {
    "vllm_max_model_len": (4096, 4096),
    "vllm_guided_decoding_regex": ("<think>.*", "<think>.*"),
    "use_liger_loss": (True, True),
    "wandb_log_unique_prompts": (True, True),
    "torch_dtype": ("bfloat16", "bfloat16"),
    "warmup_ratio": (0.1, 0.1),
    "evaluation_strategy": ("no", "no"),
    "dataset_configs": (["default"], "default"),
    "max_prompt_length": 512,
    "dataset_prompt_column": "problem",
    "system_prompt": "Think first.",
    "vllm_device": "auto",
    "vllm_dtype": "half",
    "vllm_enable_prefix_caching": True,
    "overwrite_output_dir": True,
    "logging_dir": "logs",
    "chat_template": "{{ messages }}",
    "callbacks": ["push_to_hub_revision"],
    "benchmarks": ["aime24"],
    "hub_model_revision": "v01.00",
    "push_to_hub_revision": True,
    "overwrite_hub_revision": True,
    "wandb_entity": "me",
    "wandb_project": "r1",
    "wandb_run_group": "g",
    "cosine_min_value_wrong": -1.0,
    "cosine_max_value_wrong": -0.25,
    "cosine_min_value_correct": 0.25,
    "cosine_max_value_correct": 2.0,
    "cosine_max_len": 2000,
    "repetition_n_grams": 4,
    "repetition_max_penalty": -0.5,
    "code_language": "cpp",
    "code_eval_test_batch_size": 4,
    "parallel_code_exec_per_proc": 8,
    "code_provider": "local",
    "ioi_provider": "morph",
    "e2b_router_url": "http://127.0.0.1:8000",
    "morph_router_url": "http://127.0.0.1:8001",
    "num_processes": 7,
}
ROWS = {row.kind: [r for r in RETIRED_KEYS if r.kind == row.kind] for row in RETIRED_KEYS}


def parse(argv, notes=None):
    parser = argparse.ArgumentParser()
    add_run_config_arguments(parser)
    return config_from_args(parser.parse_args(argv), notes=notes)


def test_every_row_is_tested_and_every_row_is_retired():
    assert set(VALUES) == set(BY_KEY), "give each row of recipe_keys.RETIRED_KEYS a value in VALUES"
    assert len(BY_KEY) == len(RETIRED_KEYS), "a key is in the table twice"
    ours = {f.name for f in dataclasses.fields(RunConfig)}
    for row in RETIRED_KEYS:
        assert row.key not in TRL_FIELDS, f"{row.key} is a field of the installed TRL: it is not retired"
        assert row.key in RECIPE_KEYS and row.release and row.reason and row.origin, row.key
        if row.kind == "renamed":
            assert row.becomes in TRL_FIELDS and row.becomes not in BY_KEY, row.key
        elif row.kind == "honoured":
            assert row.becomes in ours and row.instead, row.key
        else:
            assert not row.becomes and row.no_op, row.key


@pytest.mark.parametrize("row", ROWS["renamed"], ids=lambda r: r.key)
def test_a_renamed_key_reads_as_its_new_name_with_a_note(row):
    old, new = VALUES[row.key]
    fields, notes = recipe_to_fields({**BASE, row.key: old}, strict=True)
    assert fields == recipe_to_fields({**BASE, row.becomes: new})[0]
    assert len(notes) == 1 and notes[0].startswith(f"{row.key}: ")
    assert f"read as {row.becomes}" in notes[0] and row.release in notes[0]
    # the old name and the new one with the same value: fine; with different values: refused
    assert recipe_to_fields({**BASE, row.key: old, row.becomes: new})[0] == fields
    with pytest.raises(ConfigError, match=f"sets both '{row.key}'.*keep '{row.becomes}'") as info:
        recipe_to_fields({**BASE, row.key: old, row.becomes: "something else"})
    assert info.value.field == row.key


@pytest.mark.parametrize("row", ROWS["honoured"], ids=lambda r: r.key)
def test_a_honoured_key_sets_grpo_tuis_field_with_a_note(row):
    fields, notes = recipe_to_fields({**BASE, row.key: VALUES[row.key]}, strict=True)
    assert fields[row.becomes] == VALUES[row.key]
    assert len(notes) == 1 and notes[0].startswith(f"{row.key}: ") and f"grpo-tui's {row.becomes}" in notes[0]
    assert row.release in notes[0] and row.reason in notes[0]


@pytest.mark.parametrize("row", ROWS["ignored"], ids=lambda r: r.key)
def test_an_ignored_key_is_named_with_its_reason_and_strict_refuses_it(row):
    fields, notes = recipe_to_fields({**BASE, row.key: VALUES[row.key]})
    assert fields == recipe_to_fields(BASE)[0], "an ignored key changes nothing"
    assert len(notes) == 1 and notes[0].startswith(f"{row.key}: ") and "is ignored" in notes[0]
    assert row.release in notes[0] and row.reason in notes[0]
    with pytest.raises(ConfigError, match="--strict refuses ignored keys") as info:
        recipe_to_fields({**BASE, row.key: VALUES[row.key]}, strict=True)
    assert info.value.field == row.key
    # at its old default it asks for nothing: silent, even with strict
    assert recipe_to_fields({**BASE, row.key: row.no_op[0]}, strict=True) == recipe_to_fields(BASE)


def test_strict_refuses_current_keys_grpo_tui_ignores_too():
    assert recipe_to_fields({**BASE, "output_dir": "data/x"})[1] == [
        "output_dir: 'data/x' is ignored: grpo-tui writes checkpoints to RUN/checkpoints and the final model to RUN/final."
    ]
    with pytest.raises(ConfigError, match="output_dir") as info:
        recipe_to_fields({**BASE, "output_dir": "data/x"}, strict=True)
    assert info.value.field == "output_dir"


def test_unknown_keys_stay_errors_with_the_closest_key():
    with pytest.raises(ConfigError, match=r"unknown key 'vllm_devices'.*Did you mean 'vllm_device'") as info:
        recipe_to_fields({**BASE, "vllm_devices": "auto"})
    assert info.value.field == "vllm_devices"
    with pytest.raises(ConfigError, match=r"unknown key 'lerning_rate'.*Did you mean 'learning_rate'"):
        recipe_to_fields({**BASE, "lerning_rate": 1e-5}, strict=True)


def test_dataset_configs_and_warmup_ratio_values():
    # 'all' was never a configuration open-r1 loaded: the dataset's default one
    fields, notes = recipe_to_fields({**BASE, "dataset_name": "d", "dataset_configs": ["all"]})
    assert fields["dataset"] == "d" and "dataset_config" not in fields and "dataset_configs" in notes[0]
    with pytest.raises(ConfigError, match=r"names 2 dataset configurations.*set dataset_config") as info:
        recipe_to_fields({**BASE, "dataset_configs": ["a", "b"]})
    assert info.value.field == "dataset_configs"
    assert recipe_to_fields({**BASE, "warmup_ratio": 0.1, "warmup_steps": 0})[0]["warmup_ratio"] == 0.1
    with pytest.raises(ConfigError, match=r"warmup_ratio .* below 1"):
        recipe_to_fields({**BASE, "warmup_ratio": 1.0})


def test_a_dedicated_vllm_gpu_share_is_explained_in_colocate_mode():
    old = {**BASE, "use_vllm": True, "vllm_device": "auto", "vllm_gpu_memory_utilization": 0.7}
    notes = recipe_to_fields(old)[1]
    assert notes[0].startswith("vllm_device: 'auto' is ignored")
    assert notes[1].startswith("vllm_gpu_memory_utilization: 0.7 was a share of vllm_device's own GPU")
    assert len(recipe_to_fields({**old, "vllm_mode": "server"})[1]) == 1


def test_long_values_are_cut_short_in_notes():
    note = recipe_to_fields({**BASE, "chat_template": "{% for m in messages %}" * 20})[1][0]
    assert note.startswith("chat_template: '{% for m in messages %}") and "... is ignored" in note and len(note) < 400


def test_the_early_2025_open_r1_recipe_reads_key_for_key():
    path = EXAMPLES / "recipes" / "open_r1_early_2025.yaml"
    notes = []
    config = parse(["--config", str(path)], notes)
    assert config.problems(world_size=7) == []  # open-r1 trained it on 7 processes (num_processes: 7)
    assert (config.model, config.dataset, config.dataset_config, config.prompt_column) == (
        "Qwen/Qwen2.5-1.5B-Instruct",
        "AI-MO/NuminaMath-TIR",
        None,
        "problem",
    )
    assert (config.warmup_ratio, config.max_prompt_length, config.mixed_precision) == (0.1, 512, "bf16")
    assert config.grpo_args["model_init_kwargs"] == {"dtype": "bfloat16", "attn_implementation": "flash_attention_2"}
    named = [n.split(":")[0] for n in notes]
    for key in (
        "torch_dtype",
        "dataset_configs",
        "num_processes",
        "vllm_device",
        "vllm_gpu_memory_utilization",
        "max_prompt_length",
        "overwrite_output_dir",
        "warmup_ratio",
        "output_dir",
        "push_to_hub",
    ):
        assert key in named, key
    with pytest.raises(ConfigError, match="--strict") as info:
        recipe_to_fields(yaml.safe_load(path.read_text()), str(path), strict=True)
    assert info.value.field == "num_processes"


def test_docs_list_the_table():
    text = (ROOT / "docs" / "recipes.md").read_text()
    assert markdown_table() in text, "paste recipe_keys.markdown_table() into docs/recipes.md"


def test_the_strict_flag_refuses_an_ignored_key_and_names_it():
    from ..helpers import EXAMPLES, cli

    recipe = str(EXAMPLES / "recipes" / "open_r1_early_2025.yaml")
    strict = cli("launch", "--dry-run", "--config", recipe, "--strict")
    assert strict.returncode == 2 and "--strict refuses ignored keys: remove '" in strict.stderr, strict.stderr
    lenient = cli("launch", "--dry-run", "--config", recipe)
    assert "--strict refuses" not in lenient.stderr and "vllm_device" in lenient.stderr, lenient.stderr
