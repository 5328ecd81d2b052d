"""The remedy settings of a run: their flags as RunConfig generates them, the config file's form, and the checks
that refuse a bad one naming the field, the value and the fix (exit 2 from the CLI)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest
import yaml

from grpo_tui.config_flags import add_run_config_arguments, config_from_args, config_to_argv
from trainer_core.contract.config.run_config import RunConfig

from ..helpers import cli

VALID: dict[str, Any] = dict(model="m", rl_env_module="env.py", rl_env_class="Env")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    add_run_config_arguments(p)
    return p


def parse(argv: list[str]) -> RunConfig:
    return config_from_args(parser().parse_args(argv))


def problems(**changes) -> list[tuple[str, str]]:
    return [(p.field, str(p)) for p in RunConfig(**{**VALID, **changes}).problems()]


def test_remedies_are_off_by_default():
    c = RunConfig()
    assert (c.remedy, c.remedy_lr_scale, c.remedy_set, c.max_remedies) == ({}, 0.5, {}, 2)
    assert (c.remedy_severity, c.remedy_keep_bad) == ("critical", False)


def test_the_generated_flags():
    c = parse(
        [
            *("--remedy", "kl_explosion=rollback", "--remedy", "non_finite=rollback"),
            *("--remedy-lr-scale", "0.25", "--remedy-set", "rl_kl_coef=0.05", "--remedy-set", "rl_temperature=0.9"),
            *("--max-remedies", "3", "--remedy-severity", "warn", "--remedy-keep-bad"),
        ]
    )
    assert c.remedy == {"kl_explosion": "rollback", "non_finite": "rollback"}
    assert c.remedy_set == {"rl_kl_coef": 0.05, "rl_temperature": 0.9}
    assert (c.remedy_lr_scale, c.max_remedies, c.remedy_severity, c.remedy_keep_bad) == (0.25, 3, "warn", True)
    assert c.problems(), "the environment is missing, so there must be problems, but none of them remedies"
    assert not [p for p in c.problems() if p.field.startswith(("remedy", "max_remedies"))]
    assert parse(config_to_argv(c)).to_dict() == c.to_dict()


def test_help_shows_each_flag_with_its_value(capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for text in (
        "--remedy RULE=rollback",
        "--remedy-lr-scale REMEDY_LR_SCALE",
        "--remedy-set KEY=VALUE",
        "--max-remedies MAX_REMEDIES",
        "--remedy-severity REMEDY_SEVERITY",
        "--remedy-keep-bad, --no-remedy-keep-bad",
        'One of: critical, warn. (default: "critical")',
    ):
        assert text in shown, text


def test_a_config_file_names_the_remedies_as_a_mapping(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({**VALID, "remedy": {"kl_explosion": "rollback"}, "max_remedies": 1}))
    c = parse(["--config", str(path), "--remedy", "loss_spike=rollback"])
    assert c.remedy == {"kl_explosion": "rollback", "loss_spike": "rollback"} and c.max_remedies == 1
    assert RunConfig.load(c.save(tmp_path / "again.yaml")).remedy == c.remedy


def test_an_unknown_rule_is_named_with_a_suggestion():
    [(field, message)] = problems(remedy={"kl_explosin": "rollback"})
    assert field == "remedy" and "'kl_explosin', which is not a health rule" in message
    assert "Did you mean 'kl_explosion'?" in message and "--remedy kl_explosion=rollback" in message


def test_a_rule_that_cannot_take_a_remedy():
    [(field, message)] = problems(remedy={"reward_plateau": "rollback"})
    assert field == "remedy" and "'reward_plateau', which cannot take a remedy" in message
    assert "kl_explosion, non_finite" in message


def test_an_unknown_action_and_a_rule_that_also_stops_the_run():
    [(_, message)] = problems(remedy={"kl_explosion": "restart"})
    assert "is 'restart'; the one remedy is rollback (--remedy kl_explosion=rollback)" in message
    [(_, message)] = problems(remedy={"kl_explosion": "rollback"}, stop_on="kl_explosion")
    assert "kl_explosion is in both stop_on and remedy" in message and "Drop it from --stop-on" in message


@pytest.mark.parametrize("scale", [0, -0.5, 1.5, "half", True])
def test_a_bad_scale(scale):
    [(field, message)] = problems(remedy_lr_scale=scale)
    assert field == "remedy_lr_scale" and f"got {scale!r}" in message and "0 < F <= 1" in message


def test_a_scale_of_one_is_allowed():
    assert problems(remedy_lr_scale=1.0) == [] and problems(remedy_lr_scale=1) == []


def test_bad_counts_severities_and_settings():
    assert [f for f, _ in problems(max_remedies=0)] == ["max_remedies"]
    assert [f for f, _ in problems(remedy_severity="info")] == ["remedy_severity"]
    [(_, lr)] = problems(remedy_set={"lr": 1e-6})
    assert "Set --remedy-lr-scale instead" in lr
    [(_, unknown)] = problems(remedy_set={"rl_kl_cof": 0.05})
    assert "rl_kl_cof, which a resume may not change: 'rl_kl_cof' is not a setting" in unknown


def test_the_cli_refuses_a_bad_remedy_with_exit_2(tmp_path):
    result = cli(
        "train",
        *("--model", "m", "--rl-env-module", "env.py", "--rl-env-class", "Env"),
        *("--remedy", "reward_plateau=rollback", "--runs-dir", str(tmp_path)),
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "reward_plateau" in result.stderr and "cannot take a remedy" in result.stderr
    assert not list(tmp_path.iterdir())
