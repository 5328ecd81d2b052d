"""What a resume may change (contract/config/resume_changes.py): every name is a real setting, every other
setting is refused with its reason, values are read as their field's kind and judged by RunConfig's checks; and
the trainer's ``rewound`` event from a resume's record (training/runner.py)."""

from __future__ import annotations

import pytest

from trainer_core.contract.config.resume_changes import (
    ALIASES,
    MAPPINGS,
    REFUSED,
    SAFE,
    TRAINER_ARGS,
    apply_sets,
    parse_sets,
    why_unsafe,
)
from trainer_core.contract.config.run_config import ConfigError, RunConfig, config_fields
from trainer_core.contract.config.trl_names import GRPO_CONFIG_FIELDS
from trainer_core.training.runner import rewound_event

FIELDS = {f.name for f in config_fields()}
REMEDIES = ("remedy", "remedy_lr_scale", "remedy_set", "max_remedies", "remedy_severity", "remedy_keep_bad")


def test_every_safe_name_is_a_setting_and_every_other_setting_is_refused_with_a_reason():
    assert set(SAFE) <= FIELDS
    assert set(TRAINER_ARGS) <= set(GRPO_CONFIG_FIELDS) and not set(TRAINER_ARGS) & FIELDS
    assert set(ALIASES.values()) <= set(SAFE) and set(MAPPINGS) <= set(SAFE)
    assert set(REFUSED) <= FIELDS and not set(REFUSED) & set(SAFE)
    for name in ("lr", "rl_kl_coef", "rl_clip_range", "rl_temperature", "health", "stop_on", "max_steps"):
        assert why_unsafe(name) is None, name
    for name in REMEDIES:  # the remedy settings RunConfig has
        assert (name in SAFE) == (name in FIELDS), name
    for name in FIELDS - set(SAFE):
        assert why_unsafe(name), name
    assert "batch the optimizer state" in str(why_unsafe("rl_num_generations"))
    assert "did you mean lr" in str(why_unsafe("lrr"))
    assert why_unsafe("learning_rate") is None and why_unsafe("health.kl_high") is None
    assert "only health" in str(why_unsafe("lr.x"))


def test_values_are_read_as_their_fields_kind_and_only_real_changes_are_recorded():
    config = RunConfig(model="m", lr=1e-5, save_steps=50, grpo_args={"max_grad_norm": 1.0}, health={"kl_high": 1.0})
    sets = parse_sets(
        ["learning_rate=5e-6", "beta=0.05", "save_steps=10", "health.kl_high=2", "max_grad_norm=0.5", "stop_on="]
    )
    updated, changes = apply_sets(config, sets)
    assert (updated.lr, updated.rl_kl_coef, updated.save_steps) == (5e-6, 0.05, 10)
    assert updated.health == {"kl_high": 2} and updated.grpo_args == {"max_grad_norm": 0.5}
    assert changes == {
        "lr": {"from": 1e-5, "to": 5e-6},
        "rl_kl_coef": {"from": 0.1, "to": 0.05},
        "save_steps": {"from": 50, "to": 10},
        "health.kl_high": {"from": 1.0, "to": 2},
        "max_grad_norm": {"from": 1.0, "to": 0.5},
    }  # stop_on was already empty: no change
    assert config.lr == 1e-5 and config.health == {"kl_high": 1.0}  # the given config is left as it was
    assert apply_sets(config, {}) == (config, {})


@pytest.mark.parametrize(
    ("words", "field", "said"),
    [
        (["batch_size=16"], "batch_size", "a resume may not change batch_size"),
        (["lora_r=8"], "lora_r", "it changes the model"),
        (["grpo_args={}"], "grpo_args", "only max_grad_norm and epsilon_high"),
        (["lr"], "set", "--set takes KEY=VALUE"),
        (["=3"], "set", "--set takes KEY=VALUE"),
    ],
)
def test_a_setting_a_resume_may_not_change_is_named_with_why_and_the_fix(words, field, said):
    with pytest.raises(ConfigError) as caught:
        parse_sets(words)
    assert caught.value.field == field and said in str(caught.value)


@pytest.mark.parametrize(
    ("word", "field", "said"),
    [
        ("lr=0", "lr", "lr must be > 0"),
        ("lr=fast", "lr", "'fast' is not a number"),
        ("save_steps=many", "save_steps", "'many' is not a whole number"),
        ("remedy_keep_bad=maybe", "remedy_keep_bad", "'maybe' is not true or false"),
        ("health=3", "health", "health must be a mapping"),
    ],
)
def test_a_bad_value_is_refused_by_run_configs_own_checks(word, field, said):
    with pytest.raises(ConfigError) as caught:
        apply_sets(RunConfig(model="m"), parse_sets([word]))
    assert caught.value.field == field and said in str(caught.value)


def test_the_rewound_event_comes_from_a_resumes_record_only_when_it_goes_back():
    record = {
        "from_step": 40,
        "to_step": 20,
        "checkpoint": "checkpoint-20",
        "by": "user",
        "reason": None,
        "rule": None,
        "changes": {"lr": {"from": 1e-5, "to": 5e-6}},
        "revision": 2,
    }
    event = rewound_event(record)
    assert event is not None
    assert event.to_record() | {"time": 0} == {
        "type": "rewound",
        "time": 0,
        "from_step": 40,
        "to_step": 20,
        "checkpoint": "checkpoint-20",
        "reason": None,
        "by": "user",
        "rule": None,
        "changes": {"lr": {"from": 1e-5, "to": 5e-6}},
        "revision": 2,
    }
    by_rule = rewound_event(record, by="rule", reason="kl 12 > kl_high", rule="kl_explosion")
    assert by_rule is not None and (str(by_rule.by), by_rule.rule) == ("rule", "kl_explosion")
    assert rewound_event({**record, "to_step": 40}) is None  # goes on from where the run was
    assert rewound_event({}) is None and rewound_event({"from_step": "x", "to_step": 1}) is None
