"""Reward hacking, degenerate output and healthy runs, trained for real on the tiny model: each planted
reward is gamed by GRPO as real reward bugs are, and its rule fires within a few logged steps of the onset
measured here from the metrics; healthy runs, with KL and at TRL's default beta 0, raise none of the rules."""

from __future__ import annotations

import json
from statistics import mean

import pytest

from grpo_tui.resources import demo_config_file, demo_env_file
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import HealthWarning, Metrics
from trainer_core.contract.run.rules import HealthRule
from trainer_core.training.runner import train

from ..helpers import ENVS, EXAMPLES, events_of

NEW_RULES = {
    HealthRule.ONE_REWARD_CARRIES,
    HealthRule.LENGTH_EXPLOITATION,
    HealthRule.DEGENERATE_COMPLETIONS,
    HealthRule.GRAD_NORM_SPIKE,
    HealthRule.LOSS_SPIKE,
    HealthRule.CLIP_RATIO_HIGH,
    HealthRule.SAMPLING_MISMATCH,
}
HACKING_FILE = ENVS / "hacking_rewards.py"
FEW_STEPS = 5  # how soon after the onset a rule must fire: its window


@pytest.fixture(scope="module")
def pattern_prompts(tmp_path_factory):
    """The demo's instructions ("Write the letter a many times:" ...) as a dataset file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("pattern_env_for_hacking", EXAMPLES / "pattern_env.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = tmp_path_factory.mktemp("hacking-data") / "pattern.jsonl"
    path.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in module.pattern_prompts("a", 64)))
    return path


def planted(model, data, runs_dir, funcs, **settings):
    config = RunConfig(
        model=model,
        dataset=str(data),
        reward_funcs={f"{HACKING_FILE}:{name}": 1.0 for name in funcs},
        **{
            **dict(
                rl_num_generations=4,
                rl_max_new_tokens=32,
                rl_kl_coef=0.0,
                batch_size=16,
                lr=1e-4,
                scheduler="constant",
                max_steps=30,
                save_steps=1000,
                mixed_precision="no",
            ),
            **settings,
        },
    )
    events = events_of(train(config, runs_dir=runs_dir).path)
    metrics = [e for e in events if isinstance(e, Metrics)]
    return metrics, [e for e in events if isinstance(e, HealthWarning)]


def first_fired(warnings, rule: HealthRule) -> HealthWarning:
    found = [w for w in warnings if w.rule is rule]
    assert found, f"{rule.value} did not fire; fired: {[(w.rule, w.step) for w in warnings]}"
    return found[0]


def onset(metrics, condition) -> int:
    return next(m.step for m in metrics if condition(m.values))


@pytest.mark.slow
def test_a_format_reward_that_saturates_while_accuracy_stays_at_zero_is_flagged(
    pretrained_tiny_model, pattern_prompts, runs_dir
):
    metrics, warnings = planted(pretrained_tiny_model, pattern_prompts, runs_dir, ["letter_format", "never_correct"])
    key = "rewards/letter_format/mean"
    start = mean(m.values[key] for m in metrics[:5])
    began = onset(metrics, lambda v: v[key] >= start + 0.1)
    fired = first_fired(warnings, HealthRule.ONE_REWARD_CARRIES)
    assert began <= fired.step <= began + FEW_STEPS + 3, (began, fired.step)  # the flat one must be flat for 10
    assert fired.evidence["rising"] == "letter_format" and fired.evidence["flat"] == "never_correct"
    assert fired.evidence["share"] >= 0.8 and "format, not the task" in fired.message
    assert "weight" in fired.advice


@pytest.mark.slow
def test_a_reward_that_pays_for_length_is_flagged_when_length_presses_on_the_limit(
    pretrained_tiny_model, pattern_prompts, runs_dir
):
    limit = 24
    metrics, warnings = planted(
        pretrained_tiny_model, pattern_prompts, runs_dir, ["pays_for_length"], rl_max_new_tokens=limit
    )
    start = mean(m.values["reward"] for m in metrics[:5])
    # the onset: a step whose completions press on the limit while the reward has risen (one without the other
    # is no exploitation: the pre-trained model's answers are long from the start)
    began = onset(metrics, lambda v: v["completions/mean_length"] >= 0.8 * limit and v["reward"] >= start + 0.1)
    fired = first_fired(warnings, HealthRule.LENGTH_EXPLOITATION)
    assert began <= fired.step <= began + FEW_STEPS, (began, fired.step)
    assert fired.evidence["max_completion_length"] == limit and "pay for length" in fired.message
    assert min(fired.evidence["length_reward_corr"]) >= 0.7  # within each step, longer scored higher


@pytest.mark.slow
def test_a_reward_for_repeating_one_word_is_flagged_by_the_repetition_rule(
    pretrained_tiny_model, pattern_prompts, runs_dir
):
    metrics, warnings = planted(pretrained_tiny_model, pattern_prompts, runs_dir, ["pays_for_repetition"], lr=3e-4)
    began = onset(metrics, lambda v: v.get("samples/repetition", 0) >= 0.5)
    fired = first_fired(warnings, HealthRule.DEGENERATE_COMPLETIONS)
    # the statistic is noisy: a first step above 0.5 can fall back to 0.24 the next (measured), and the rule waits
    # for a window that stays high
    assert began <= fired.step <= began + FEW_STEPS + 3, (began, fired.step)
    assert fired.evidence["metric"] == "samples/repetition" and fired.evidence["start"] < 0.1
    # the statistic is the trainer's own, written with TRL's metrics at every step
    assert all("samples/repetition" in m.values and "samples/near_duplicates" in m.values for m in metrics)


@pytest.mark.slow
def test_a_healthy_run_at_beta_0_raises_none_of_the_new_rules(pretrained_tiny_model, runs_dir):
    config = RunConfig.load(demo_config_file())
    config.model, config.rl_env_module = pretrained_tiny_model, str(demo_env_file())
    config.rl_kl_coef, config.max_steps, config.save_steps = 0.0, 60, 1000
    events = events_of(train(config, runs_dir=runs_dir).path)
    warnings = [e for e in events if isinstance(e, HealthWarning)]
    assert not [(w.rule, w.step, w.message) for w in warnings if w.rule in NEW_RULES]
    [info] = [w for w in warnings if w.rule is HealthRule.KL_NOT_MEASURED]
    assert info.evidence["drift_rules"] == ["grad_norm_spike", "loss_spike", "clip_ratio_high"]
    metrics = [e for e in events if isinstance(e, Metrics)]
    assert "kl" not in metrics[-1].values and "grad_norm" in metrics[-1].values  # what the drift rules read
