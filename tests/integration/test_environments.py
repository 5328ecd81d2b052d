"""Environment modules under real training: loading errors, bad scores, columns, tools, composed rewards.

These run the runner in-process through the Python API (``train``) on the tiny model; a failure must end
the run as ``failed`` with an ``error`` event carrying the user's traceback and the case.
"""

from __future__ import annotations

import json

import pytest

from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import read_records
from trainer_core.contract.run.events import Error, Metrics, RunFinished, RunStarted
from trainer_core.contract.run.status import Status
from trainer_core.training.runner import train

from ..helpers import ENVS, EXAMPLES, events_of

BAD = str(ENVS / "bad_envs.py")


def run(tiny_model, runs_dir, cls, module=BAD, **overrides):
    settings = dict(rl_num_generations=4, batch_size=8, rl_max_new_tokens=8, max_steps=2, save_steps=1000)
    config = RunConfig(model=tiny_model, rl_env_module=module, rl_env_class=cls, **{**settings, **overrides})
    result = train(config, runs_dir=runs_dir)
    events = events_of(result.path)
    state = json.loads((result.path / "state.json").read_text())
    return result, events, state


def failure(tiny_model, runs_dir, cls, **kw):
    result, events, state = run(tiny_model, runs_dir, cls, **kw)
    assert result.status is Status.FAILED and state["status"] == "failed"
    errors = [e for e in events if isinstance(e, Error)]
    assert len(errors) == 1
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    assert events[-1].status is Status.FAILED
    return errors[0], events


def test_module_not_found_is_named(tiny_model, runs_dir):
    error, _ = failure(tiny_model, runs_dir, "X", module="no_such_pkg.envs")
    assert "environment module 'no_such_pkg.envs' not found" in error.message


def test_missing_file_is_named(tiny_model, runs_dir):
    error, _ = failure(tiny_model, runs_dir, "X", module="envs/missing_env.py")
    assert "missing_env.py" in error.message and "not found" in error.message


def test_class_not_found_lists_the_classes(tiny_model, runs_dir):
    error, _ = failure(tiny_model, runs_dir, "Nope")
    assert "class 'Nope' not found" in error.message
    assert "Good" in error.message and "WithTools" in error.message


def test_missing_method(tiny_model, runs_dir):
    error, _ = failure(tiny_model, runs_dir, "MissingScore")
    assert "missing score_episode" in error.message


def test_dataset_without_prompt_column(tiny_model, runs_dir):
    error, _ = failure(tiny_model, runs_dir, "NoPrompt")
    assert "no 'prompt' column" in error.message and "question, answer" in error.message


def test_build_dataset_must_return_a_dataset(tiny_model, runs_dir):
    error, _ = failure(tiny_model, runs_dir, "NotADataset")
    assert "must return a datasets.Dataset, got list" in error.message


def test_score_episode_exception_shows_user_traceback_and_case(tiny_model, runs_dir):
    error, _ = failure(tiny_model, runs_dir, "Raises")
    assert "score_episode raised KeyError: 'paris'" in error.message
    assert "lookup_price" in error.traceback and "bad_envs.py" in error.traceback
    assert error.case["columns"]["city"] == "paris"
    assert "completion_start" in error.case


@pytest.mark.parametrize("cls,shown", [("ReturnsNaN", "nan"), ("OutOfRange", "1.5")])
def test_bad_scores_are_refused_not_clamped(tiny_model, runs_dir, cls, shown):
    error, events = failure(tiny_model, runs_dir, cls)
    assert f"score_episode returned {shown}" in error.message and "never clamped" in error.message
    assert error.case["score"] == shown
    assert not [e for e in events if isinstance(e, Metrics)]


def test_a_late_failure_keeps_the_steps_already_logged(tiny_model, runs_dir):
    error, events = failure(tiny_model, runs_dir, "RaisesLater", max_steps=6)
    steps = [e.step for e in events if isinstance(e, Metrics)]
    assert steps == [1, 2, 3]
    assert "reward service unavailable" in error.message


def test_extra_columns_and_the_live_model_reach_score_episode(tiny_model, runs_dir, tmp_path):
    seen = tmp_path / "seen.txt"
    result, events, _state = run(tiny_model, runs_dir, "Good", rl_env_config={"seen_file": str(seen)})
    assert result.status is Status.COMPLETED
    rows = [line.split(",") for line in seen.read_text().splitlines()]
    assert len(rows) == 2 * 8
    assert {r[0] for r in rows} <= {"paris", "rome"} and all(r[1].isdigit() for r in rows)
    assert {r[2] for r in rows} == {"LlamaForCausalLM"} and {r[3] for r in rows} == {"str"}
    metrics = [e for e in events if isinstance(e, Metrics)]
    assert [m.step for m in metrics] == [1, 2]
    for m in metrics:
        assert {"reward", "reward_std", "kl", "loss", "rewards/score_episode/mean"} <= set(m.values)
    samples = read_records(result.path / "samples.jsonl")
    assert len(samples) == len((result.path / "samples.jsonl").read_text().splitlines())
    assert samples and {s["step"] for s in samples} == {1, 2}
    assert all(set(s["columns"]) == {"city", "idx"} and 0 <= s["reward"] <= 1 for s in samples)


def test_tools_appear_in_the_rendered_prompt(tiny_model, runs_dir):
    result, _events, _ = run(tiny_model, runs_dir, "WithTools")
    assert result.status is Status.COMPLETED
    sample = read_records(result.path / "samples.jsonl")[0]
    assert '"name": "search_hotels"' in sample["prompt"]
    assert sample["prompt"].rstrip().endswith("<|assistant|>")


def test_composed_rewards_log_each_function(tiny_model, runs_dir):
    result, events, _ = run(
        tiny_model, runs_dir, "MathEnv", module=str(EXAMPLES / "math_env.py"), rl_env_config={"num_problems": 16}
    )
    assert result.status is Status.COMPLETED, events[-2:]
    metrics = [e for e in events if isinstance(e, Metrics)]
    assert metrics and all(
        {"rewards/score_episode/mean", "rewards/format_reward/mean"} <= set(m.values) for m in metrics
    )


def test_dotted_module_path_from_the_current_directory(tiny_model, runs_dir, monkeypatch):
    monkeypatch.chdir(EXAMPLES.parent)
    result, events, _ = run(tiny_model, runs_dir, "PatternEnv", module="examples.pattern_env", peft=True, lora_r=4)
    assert result.status is Status.COMPLETED, events[-2:]
    assert (result.path / "final" / "adapter_config.json").exists()


def test_an_environment_file_that_is_not_python_is_a_clear_error(tmp_path):
    from trainer_core.environment.user_code import UserCodeError
    from trainer_core.environment.user_env import load_environment

    module = tmp_path / "my_env"  # no .py: importlib finds no loader for it
    module.write_text("class Env: ...\n")
    with pytest.raises(UserCodeError, match=r"my_env is not a Python \(\.py\) file\. Check --rl-env-module"):
        load_environment(str(module), "Env")
