"""FieldSpec: each RunConfig field's kind, choices and required flag, derived once from its type annotation."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Literal, get_args, get_type_hints

import pytest
from hypothesis import given
from hypothesis import strategies as st

import trainer_core.contract.config.checks as config_checks
from grpo_tui.config_flags import add_run_config_arguments
from grpo_tui.field_spec import FIELD_KINDS, JSON_KINDS, _kind, field_spec, field_specs
from trainer_core.contract.config.notify_urls import NOTIFY_SEVERITIES
from trainer_core.contract.config.run_config import ConfigError, RunConfig, flag_for

SPECS = field_specs()


def test_one_spec_per_field_in_field_order_and_cached():
    assert [s.name for s in SPECS] == [f.name for f in dataclasses.fields(RunConfig)]
    assert field_specs() is SPECS
    assert all(s.kind in FIELD_KINDS and s.help and s.group for s in SPECS)
    assert all(s.flag == flag_for(f) for s, f in zip(SPECS, dataclasses.fields(RunConfig)))


@pytest.mark.parametrize(
    "name,kind,optional",
    [
        ("model", "str", True),
        ("project_name", "str", False),
        ("trainer", "choice", False),
        ("rl_env_config", "json", True),
        ("rl_num_generations", "int", False),
        ("max_prompt_length", "int", True),
        ("rl_mask_truncated_completions", "bool", False),
        ("rl_kl_coef", "float", False),
        ("epochs", "float", False),
        ("vllm_mode", "choice", False),
        ("grpo_args", "mapping", False),
        ("health", "mapping", False),
        ("slurm", "mapping", False),
        ("reward_funcs", "weights", False),
        ("save_total_limit", "int", True),
        ("notify", "list", False),
        ("notify_severity", "choice", False),
    ],
)
def test_kind_comes_from_the_type_annotation(name, kind, optional):
    spec = field_spec(name)
    assert (spec.kind, spec.optional) == (kind, optional)


def test_choice_fields_are_literals_and_their_choices_are_its_values():
    hints = get_type_hints(RunConfig)
    choices = {s.name: s.choices for s in SPECS if s.kind == "choice"}
    assert set(choices) == {
        *("trainer", "rl_loss_type", "vllm_mode", "mixed_precision", "on_missing", "notify_severity"),
        "remedy_severity",
    }
    for name, values in choices.items():
        assert values == get_args(hints[name]) and values, name
        assert field_spec(name).default in values
    # the checks offer the same values
    assert choices["rl_loss_type"] == config_checks.LOSS_TYPES
    assert choices["vllm_mode"] == config_checks.VLLM_MODES
    assert choices["mixed_precision"] == config_checks.MIXED_PRECISION
    assert choices["trainer"] == config_checks.TRAINERS
    assert choices["on_missing"] == config_checks.ON_MISSING
    assert choices["notify_severity"] == NOTIFY_SEVERITIES
    assert all(not s.choices for s in SPECS if s.kind != "choice")


def test_required_fields_and_how_they_are_shown():
    required = {s.name: s.required_text for s in SPECS if s.required}
    assert required == {
        "model": "required",
        "rl_env_module": "required (or a dataset)",
        "rl_env_class": "required (or a dataset)",
    }
    assert field_spec("lr").required_text == ""


def test_kinds_of_types_not_in_runconfig_today():
    assert _kind("x", Literal["a", "b"] | None) == ("choice", True, ("a", "b"))
    assert _kind("x", dict[str, Any]) == ("mapping", False, ())
    assert _kind("x", dict[str, float]) == ("weights", False, ())
    assert _kind("x", float | None) == ("float", True, ())
    assert _kind("x", list[str] | None) == ("list", True, ())
    for unsupported in (list[int], int | str, tuple[int, ...]):
        with pytest.raises(TypeError, match=r"RunConfig.x: no field kind"):
            _kind("x", unsupported)


def test_unknown_field_name():
    with pytest.raises(KeyError):
        field_spec("no_such_field")


def test_default_value_is_a_fresh_copy():
    spec = field_spec("grpo_args")
    value = spec.default_value()
    value["x"] = 1
    assert spec.default == {} and spec.default_value() == {}


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_format_then_parse_gives_the_default_back(spec):
    assert spec.parse(spec.format(spec.default)) == spec.default


def test_parse_turns_text_into_values_with_field_errors():
    assert field_spec("max_prompt_length").parse(" none ") is None
    assert field_spec("max_prompt_length").parse("12") == 12
    assert field_spec("lr").parse("3e-4") == 3e-4
    assert field_spec("system_prompt").parse("") is None
    assert field_spec("target_modules").parse("") == ""
    assert field_spec("grpo_args").parse('{"max_grad_norm": 0.5}') == {"max_grad_norm": 0.5}
    assert field_spec("rl_env_config").parse('{"max_turns": 3}') == {"max_turns": 3}
    assert field_spec("notify").parse(" https://a.example/x\nhttps://b.example/y ") == [
        "https://a.example/x",
        "https://b.example/y",
    ]
    with pytest.raises(ConfigError, match=r"^batch_size must be an integer, got 'x'\.$") as info:
        field_spec("batch_size").parse("x")
    assert info.value.field == "batch_size"
    with pytest.raises(ConfigError, match=r"^lr needs a value: a number\.$"):
        field_spec("lr").parse("")
    with pytest.raises(ConfigError, match=r"^health must be a JSON object, got list \[1\]\.$"):
        field_spec("health").parse("[1]")
    with pytest.raises(ConfigError, match="Example: --rl-env-config"):
        field_spec("rl_env_config").parse("[1]")


def test_format_gives_each_widget_its_value():
    assert field_spec("peft").format(1) is True
    assert field_spec("vllm_mode").format("server") == "server"
    assert field_spec("reward_funcs").format({}) == ""
    assert field_spec("reward_funcs").format({"a": 1.0}) == '{"a": 1.0}'
    assert field_spec("model").format(None) == ""
    assert field_spec("epochs").format(2.5) == "2.5"
    assert field_spec("notify").format([]) == "" and field_spec("notify").format(["a", "b"]) == "a b"
    assert {s.name for s in SPECS if s.is_json} == {
        *("rl_env_config", "grpo_args", "health", "slurm", "reward_funcs"),
        *("remedy", "remedy_set"),
    }
    assert set(JSON_KINDS) <= set(FIELD_KINDS)


@given(st.text())
def test_parse_of_any_text_is_a_value_or_a_config_error(text):
    for spec in SPECS:
        try:
            spec.parse(text)
        except ConfigError as exc:
            assert exc.field == spec.name


def test_every_spec_has_its_flag_in_the_parser():
    parser = argparse.ArgumentParser()
    add_run_config_arguments(parser)
    options = {opt for action in parser._actions for opt in action.option_strings}
    assert all(s.flag in options for s in SPECS)
    assert "--no-use-vllm" in options and "--use-vllm" in options
