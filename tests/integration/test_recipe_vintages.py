"""Published GRPO recipes of three vintages, run as they are on a CPU: open-r1's early-2025 demo
(``dataset_configs``, ``vllm_device``, ``flash_attention_2``, ``bf16``), its current one, and TRL's docs quick
start (examples/recipes/). Only the model and the data are made local (``--model``, ``--dataset``); flags shrink
the sizes so each trains two steps in seconds, as a user trying a recipe on a laptop would. The early one is
first refused with one error line per hardware setting this machine cannot run, nothing created; with
``--on-missing fallback`` it trains, the fallbacks on record as a ``hardware_fallback`` warning and in the
config.yaml that ran. Every key the reader ignores or renames is named on stderr."""

from __future__ import annotations

import json

import pytest
import yaml

from trainer_core.contract.recipes.reader import recipe_to_fields
from trainer_core.contract.run.events import HealthWarning, Metrics, RunFinished
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.status import Status

from ..helpers import EXAMPLES, cli, events_of, only_run

pytestmark = pytest.mark.slow
RECIPES = EXAMPLES / "recipes"
SHRINK = ("--max-steps", "2", "--rl-max-new-tokens", "8", "--gradient-accumulation", "1", "--logging-steps", "1")
HARDWARE = ["attn_implementation", "mixed_precision", "dtype", "use_vllm", "report_to"]


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    """Math problems in open-r1's columns (problem, solution) and in TRL's (prompt, solution)."""
    rows = [(f"What is {a} plus {b}?", f"${a + b}$") for a in range(1, 5) for b in range(1, 5)]
    folder = tmp_path_factory.mktemp("data")
    for name, column in (("open_r1.jsonl", "problem"), ("trl.jsonl", "prompt")):
        (folder / name).write_text("".join(json.dumps({column: q, "solution": s}) + "\n" for q, s in rows))
    return folder


def notes_of(recipe) -> list[str]:
    """What the reader says about the recipe's keys, as it says it on stderr."""
    return [
        f"warning: {recipe}: {note}" for note in recipe_to_fields(yaml.safe_load(recipe.read_text()), str(recipe))[1]
    ]


def train(recipe, tiny_model, dataset, runs_dir, *extra):
    return cli(
        "train", "--config", str(recipe), "--model", tiny_model, "--dataset", str(dataset),
        "--runs-dir", str(runs_dir), *SHRINK, *extra,
    )  # fmt: skip


def trained(result, runs_dir, steps=(1, 2)):
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-2000:]
    run = only_run(runs_dir)
    events = events_of(run)
    assert isinstance(events[-1], RunFinished) and events[-1].status is Status.COMPLETED
    assert [e.step for e in events if isinstance(e, Metrics)] == list(steps)
    return run, events


def fallbacks(events) -> dict:
    [warning] = [e for e in events if isinstance(e, HealthWarning) and e.rule is HealthRule.HARDWARE_FALLBACK]
    return {r["setting"]: r["original"] for r in warning.evidence["fallbacks"]}


def test_the_early_2025_open_r1_recipe_is_refused_per_hardware_setting_then_trains_with_fallbacks(
    tiny_model, problems, tmp_path
):
    pytest.importorskip("math_verify")  # its accuracy_reward
    recipe, runs = RECIPES / "open_r1_early_2025.yaml", tmp_path / "runs"
    refused = train(recipe, tiny_model, problems / "open_r1.jsonl", runs, "--batch-size", "7")
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error: ")]
    assert refused.returncode == 2 and [e.split()[1].rstrip(":") for e in errors] == HARDWARE, refused.stderr
    assert "sdpa instead of flash_attention_2" in errors[0] and "a recipe's bf16: true" in errors[1]
    assert "vLLM is not installed" in errors[3] and "wandb is not installed" in errors[4]
    assert not runs.exists()  # refused before anything was created, or imported
    for note in notes_of(recipe):  # vllm_device, dataset_configs, num_processes, do_eval, hub_model_id, ...
        assert note in refused.stderr, note
    assert "warning: " + f"{recipe}: vllm_device: 'auto' is ignored" in refused.stderr

    # the recipe evaluates its Hub dataset's test split (eval_strategy: steps): here, the local prompts
    result = train(
        recipe, tiny_model, problems / "open_r1.jsonl", runs, "--batch-size", "7", "--on-missing", "fallback",
        "--eval-dataset", str(problems / "open_r1.jsonl"), "--eval-split", "train",
    )  # fmt: skip
    run, events = trained(result, runs)
    for setting in HARDWARE:
        assert f"warning: hardware: fallback: {setting}: " in result.stderr, setting
    assert fallbacks(events) == {
        "attn_implementation": "flash_attention_2",
        "mixed_precision": "bf16",
        "dtype": "bfloat16",
        "use_vllm": True,
        "report_to": "wandb",
    }
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["grpo_args"]["model_init_kwargs"] == {"dtype": "float32", "attn_implementation": "sdpa"}
    assert (saved["mixed_precision"], saved["use_vllm"], saved["report_to"]) == ("no", False, "none")
    assert saved["dataset_config"] is None and saved["prompt_column"] == "problem"  # dataset_configs: [all]


def test_open_r1s_current_recipe_trains_with_fallbacks(tiny_model, problems, tmp_path):
    pytest.importorskip("math_verify")
    recipe, runs = RECIPES / "open_r1_current.yaml", tmp_path / "runs"
    result = train(
        recipe, tiny_model, problems / "open_r1.jsonl", runs, "--batch-size", "16", "--on-missing", "fallback"
    )
    _, events = trained(result, runs)
    for note in notes_of(recipe):  # hub_model_id, output_dir, push_to_hub, save_strategy, ...
        assert note in result.stderr, note
    assert set(fallbacks(events)) == set(HARDWARE)
    last = [e for e in events if isinstance(e, Metrics)][-1].values
    for name in ("accuracy_reward", "format_reward", "tag_count_reward"):
        assert f"rewards/{name}/mean" in last, name


def test_the_trl_docs_quick_start_trains_as_it_is(tiny_model, problems, tmp_path):
    pytest.importorskip("math_verify")
    recipe, runs = RECIPES / "trl_docs_grpo.yaml", tmp_path / "runs"
    result = train(recipe, tiny_model, problems / "trl.jsonl", runs)
    run, events = trained(result, runs)
    assert "error:" not in result.stderr and "hardware" not in result.stderr  # nothing this machine lacks
    assert notes_of(recipe) == [f"warning: {recipe}: output_dir: 'Qwen2-0.5B-GRPO' is ignored: {_OWN_FOLDER}."]
    assert notes_of(recipe)[0] in result.stderr
    assert not [e for e in events if isinstance(e, HealthWarning) and e.rule is HealthRule.HARDWARE_FALLBACK]
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert (saved["rl_num_generations"], saved["batch_size"], saved["rl_kl_coef"]) == (8, 8, 0.0)  # TRL's defaults


_OWN_FOLDER = "grpo-tui writes checkpoints to RUN/checkpoints and the final model to RUN/final"
