"""`trl grpo` recipes run as they are: an open-r1-shaped recipe on a local JSONL trains through `grpo-tui train
--config`, reward functions by name and by file, the reward inspection of a dataset run, and TensorBoard
writing the reward series inside the run folder."""

from __future__ import annotations

import json

import pytest
import yaml

from trainer_core.contract.run.event_log import read_records
from trainer_core.contract.run.events import Error, Metrics, RunFinished
from trainer_core.contract.run.status import Status

from ..helpers import ENVS, cli, events_of, only_run

pytestmark = pytest.mark.slow
REWARDS = ENVS / "recipe_rewards.py"


def math_jsonl(tmp_path) -> str:
    rows = [{"prompt": f"What is {a} plus {b}?", "solution": f"${a + b}$"} for a in range(1, 6) for b in range(1, 5)]
    path = tmp_path / "math.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def open_r1_demo(model: str, dataset: str) -> dict:
    """open-r1's recipes/DeepSeek-R1-Distill-Qwen-1.5B/grpo/config_demo.yaml, with the tiny model, a local JSONL
    in place of the Hub dataset, and sizes a CPU trains in seconds."""
    return {
        "model_name_or_path": model,
        "model_revision": "main",
        "torch_dtype": "bfloat16",
        "attn_implementation": "sdpa",
        "dataset_name": dataset,
        "dataset_prompt_column": "prompt",
        "system_prompt": "You are a helpful AI Assistant. Respond in the following format: <think>\n...\n</think>\n"
        "<answer>\n...\n</answer>",
        "seed": 42,
        "bf16": True,
        "use_vllm": False,
        "do_eval": False,
        "gradient_accumulation_steps": 1,
        "gradient_checkpointing": True,
        "gradient_checkpointing_kwargs": {"use_reentrant": False},
        "hub_model_id": "tiny-GRPO",
        "hub_strategy": "every_save",
        "learning_rate": 2.0e-05,
        "log_completions": False,
        "log_level": "info",
        "logging_first_step": True,
        "logging_steps": 1,
        "logging_strategy": "steps",
        "lr_scheduler_type": "cosine",
        "max_prompt_length": 256,
        "max_completion_length": 16,
        "max_steps": 3,
        "num_generations": 4,
        "num_train_epochs": 1,
        "output_dir": "data/tiny-GRPO",
        "overwrite_output_dir": True,
        "per_device_eval_batch_size": 4,
        "per_device_train_batch_size": 4,
        "push_to_hub": False,
        "report_to": ["none"],
        "reward_funcs": ["accuracy_reward", "think_format_reward"],
        "reward_weights": [1.0, 1.0],
        "save_strategy": "steps",
        "save_steps": 2,
        "save_total_limit": 1,
        "temperature": 0.7,
        "warmup_ratio": 0.1,
    }


def write(tmp_path, data) -> str:
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_open_r1_recipe_trains_as_it_is(tiny_model, runs_dir, tmp_path):
    pytest.importorskip("math_verify")
    recipe = write(tmp_path, open_r1_demo(tiny_model, math_jsonl(tmp_path)))
    # bf16 and bfloat16 weights cannot run on a CPU: refused unless their fallbacks are asked for
    refused = cli("train", "--config", recipe, "--runs-dir", str(runs_dir))
    assert refused.returncode == 2 and "error: mixed_precision: bf16" in refused.stderr, refused.stderr[-3000:]
    result = cli("train", "--config", recipe, "--on-missing", "fallback", "--runs-dir", str(runs_dir))
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout
    for key in ("hub_model_id", "output_dir", "overwrite_output_dir", "per_device_eval_batch_size"):
        assert f"warning: {recipe}: {key}:" in result.stderr, key
    run = only_run(runs_dir)
    events = events_of(run)
    assert isinstance(events[-1], RunFinished) and events[-1].status is Status.COMPLETED
    steps = [e for e in events if isinstance(e, Metrics)]
    assert [m.step for m in steps] == [1, 2, 3]
    for m in steps:
        assert {"rewards/accuracy_reward/mean", "rewards/think_format_reward/mean", "reward"} <= set(m.values)
    samples = read_records(run / "samples.jsonl")
    assert samples and set(samples[0]["rewards"]) == {"accuracy_reward", "think_format_reward"}
    assert samples[0]["prompt"].startswith("system: You are a helpful AI Assistant")
    assert samples[0]["columns"]["solution"].startswith("$")
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["reward_funcs"] == {"accuracy_reward": 1.0, "think_format_reward": 1.0}
    assert saved["grpo_args"]["model_init_kwargs"] == {"dtype": "float32", "attn_implementation": "sdpa"}
    assert saved["mixed_precision"] == "no"  # the fallbacks, on record in the config that ran
    assert (run / "final" / "config.json").exists()


def test_tensorboard_writes_the_reward_series_in_the_run_folder(tiny_model, runs_dir, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    recipe = write(
        tmp_path,
        {
            "model_name_or_path": tiny_model,
            "datasets": [{"path": "json", "data_files": math_jsonl(tmp_path)}],
            "reward_funcs": [f"{REWARDS}:letter_share", f"{REWARDS}:exact_solution"],
            "reward_weights": [1.0, 2.0],
            "num_generations": 4,
            "per_device_train_batch_size": 8,
            "max_completion_length": 12,
            "max_steps": 3,
            "logging_steps": 1,
            "bf16": False,
            "gradient_checkpointing": False,
            "learning_rate": 2e-3,
            "report_to": ["tensorboard"],
        },
    )
    result = cli("train", "--config", recipe, "--runs-dir", str(runs_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    run = only_run(runs_dir)
    files = list((run / "tensorboard").glob("events.out.tfevents.*"))
    assert files, f"no TensorBoard event file under {run / 'tensorboard'}"
    assert not list((run / "checkpoints").glob("runs"))  # not in TRL's default place under output_dir
    board = EventAccumulator(str(run / "tensorboard"))
    board.Reload()
    tags = board.Tags()["scalars"]
    assert {"train/rewards/letter_share/mean", "train/rewards/exact_solution/mean", "train/reward"} <= set(tags)
    series = board.Scalars("train/rewards/letter_share/mean")
    metrics = [e for e in events_of(run) if isinstance(e, Metrics)]
    assert [s.step for s in series] == [m.step for m in metrics] == [1, 2, 3]
    for point, m in zip(series, metrics):
        assert point.value == pytest.approx(m.values["rewards/letter_share/mean"], rel=1e-5, abs=1e-6)


def test_a_failing_reward_function_stops_the_run_with_its_name(tiny_model, runs_dir, tmp_path):
    result = cli(
        "train",
        "--model",
        tiny_model,
        "--dataset",
        math_jsonl(tmp_path),
        "--reward-func",
        f"{REWARDS}:broken",
        "--rl-num-generations",
        "4",
        "--batch-size",
        "4",
        "--rl-max-new-tokens",
        "8",
        "--max-steps",
        "2",
        "--runs-dir",
        str(runs_dir),
    )
    assert result.returncode == 1
    errors = [e for e in events_of(only_run(runs_dir)) if isinstance(e, Error)]
    assert errors and errors[0].kind == "environment"
    assert "reward function broken raised ValueError: broken on purpose" in errors[0].message
    assert "recipe_rewards.py" in (errors[0].traceback or "")


def test_inspection_gate_scores_a_dataset_run(tiny_model, runs_dir, tmp_path):
    common = [
        "--model",
        tiny_model,
        "--dataset",
        math_jsonl(tmp_path),
        "--rl-num-generations",
        "4",
        "--rl-max-new-tokens",
        "8",
        "--samples",
        "8",
        "--runs-dir",
        str(runs_dir),
    ]
    result = cli(
        "inspect", *common, "--reward-func", f"{REWARDS}:letter_share", "--reward-func", f"{REWARDS}:exact_solution=2"
    )
    assert result.returncode in (0, 4), result.stderr[-3000:]
    folder = next((runs_dir / "inspections").iterdir())
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["reward_weights"] == {"letter_share": 1.0, "exact_solution": 2.0}
    assert summary["samples"] == 8 and summary["errors"] == 0
    for record in read_records(folder / "inspection.jsonl"):
        rewards = record["rewards"]
        assert record["score"] == pytest.approx(rewards["letter_share"] + 2 * rewards["exact_solution"])
        assert "solution" in record["columns"]
    broken = cli("inspect", *common, "--reward-func", f"{REWARDS}:broken")
    assert broken.returncode == 4, broken.stderr[-3000:]
    assert "reward function broken raised ValueError" in broken.stdout
