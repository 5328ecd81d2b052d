"""Command-line flags generated from RunConfig's field specs, so ``--help``, the form and the docs share one source.

Stdlib only. Each field's flag follows its kind (grpo_tui/field_spec.py): a switch pair for a bool, a repeatable
``KEY=VALUE`` or ``NAME[=WEIGHT]`` for a mapping, a repeatable value for a list, one value otherwise. Flags given on the command line
override values from ``--config FILE``; only flags the user actually typed override anything (argparse
defaults are suppressed and shown in the help text instead).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from grpo_tui.field_spec import FieldSpec, field_specs
from trainer_core.contract.config.checks import word_list
from trainer_core.contract.config.run_config import ConfigError, RunConfig, load_file, load_text, reward_funcs_mapping
from trainer_core.contract.recipes.reader import RECIPE_FORMATS, STRICT_HELP, is_recipe, recipe_to_fields

REPEATED_KINDS = ("mapping", "weights", "list")
"""Kinds whose flag is given once per item, the items merged over the config file's mapping (or added to its
list)."""

GROUP_TITLES = {
    "model": "model & environment",
    "grpo": "GRPO",
    "generation": "generation",
    "vllm": "vLLM",
    "lora": "LoRA",
    "optimisation": "optimisation",
    "hardware": "hardware & output",
    "health": "health",
    "slurm": "Slurm",
    "data": "dataset & reward functions",
    "eval": "held-out evaluation",
}


def _scalar(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _key_value(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r} (e.g. --grpo-arg max_grad_norm=0.5)")
    key, value = text.split("=", 1)
    return key.strip(), _scalar(value)


def _reward_item(text: str) -> tuple[str, Any]:
    """--reward-func NAME or NAME=WEIGHT (the weight defaults to 1.0, as in TRL)."""
    name, sep, weight = text.rpartition("=")
    if sep:
        try:
            return name.strip(), float(weight)
        except ValueError:
            pass
    return text.strip(), 1.0


def _optional_int(text: str) -> int | None:
    return None if text.lower() in ("none", "null", "") else int(text)


def _optional_str(text: str) -> str | None:
    return None if text.lower() in ("none", "null", "") else text


def _type_for(spec: FieldSpec) -> Callable[[str], Any]:
    """argparse's type for a one-value flag (its name is in argparse's 'invalid ... value' message)."""
    if spec.kind == "int":
        return _optional_int if spec.optional else int
    if spec.kind == "float":
        return float
    return _optional_str if spec.optional else str


def add_run_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --config and one flag per RunConfig field, grouped as in the form."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="YAML or JSON config file ('-': read it from stdin), or a `trl grpo` recipe; flags given "
        "here override it.",
    )
    parser.add_argument(
        "--format",
        dest="config_format",
        choices=RECIPE_FORMATS,
        default="auto",
        help="what --config holds: grpo-tui's own fields, a trl grpo recipe (trl), or auto: a recipe "
        "when it has TRL keys such as model_name_or_path (default: auto)",
    )
    parser.add_argument("--strict", action="store_true", default=False, help=STRICT_HELP)
    groups: dict[str, argparse._ArgumentGroup] = {}
    for spec in field_specs():
        group = groups.get(spec.group) or parser.add_argument_group(GROUP_TITLES[spec.group])
        groups[spec.group] = group
        shown = "required" if spec.required else json.dumps(spec.default)
        choices = f" One of: {', '.join(spec.choices)}." if spec.choices else ""
        help_text = f"{spec.help}{choices} (default: {shown})"
        kwargs: dict[str, Any] = {"dest": spec.name, "default": argparse.SUPPRESS, "help": help_text}
        if spec.kind == "weights":
            group.add_argument(spec.flag, type=_reward_item, action="append", metavar="NAME[=WEIGHT]", **kwargs)
        elif spec.kind == "mapping":
            group.add_argument(
                spec.flag, type=_key_value, action="append", metavar=spec.metavar or "KEY=VALUE", **kwargs
            )
        elif spec.kind == "list":
            group.add_argument(spec.flag, action="append", metavar=spec.metavar or spec.name.upper(), **kwargs)
        elif spec.kind == "json":
            group.add_argument(spec.flag, metavar="JSON", **kwargs)
        elif spec.kind == "bool":
            group.add_argument(spec.flag, action=argparse.BooleanOptionalAction, **kwargs)
        else:
            group.add_argument(spec.flag, type=_type_for(spec), metavar=spec.name.upper(), **kwargs)


def config_from_args(args: argparse.Namespace, notes: list[str] | None = None) -> RunConfig:
    """Merge ``--config FILE`` (grpo-tui's own fields or a `trl grpo` recipe) with the flags given; raise
    ConfigError naming the bad key or value. What a recipe sets that grpo-tui does differently goes to
    ``notes``, or is printed to stderr as warnings when no list is given."""
    data: dict[str, Any] = {}
    if getattr(args, "config", None) == "-":
        data.update(load_text(sys.stdin.read(), "stdin"))
        source = "stdin"
    elif getattr(args, "config", None):
        data.update(load_file(args.config))
        source = args.config
    else:
        source = "config"
    if data and is_recipe(data, getattr(args, "config_format", "auto")):
        data, recipe_notes = recipe_to_fields(data, source, strict=getattr(args, "strict", False))
        if notes is None:
            for note in recipe_notes:
                print(f"warning: {source}: {note}", file=sys.stderr)
        else:
            notes.extend(recipe_notes)
    if "reward_funcs" in data:
        data["reward_funcs"] = reward_funcs_mapping(data["reward_funcs"])
    for spec in field_specs():
        name = spec.name
        if hasattr(args, name):
            value = getattr(args, name)
            if spec.kind == "list":
                base = word_list(data.get(name))
                if not isinstance(base, list):
                    raise ConfigError(name, f"{name} in {source} must be a list, got {type(base).__name__}.")
                value = list(dict.fromkeys([*base, *value]))
            elif spec.kind in REPEATED_KINDS:
                base = data.get(name) or {}
                if not isinstance(base, dict):
                    raise ConfigError(name, f"{name} in {source} must be a mapping of KEY: VALUE, got {base!r}.")
                value = {**base, **dict(value)}
            data[name] = value
    return RunConfig.from_dict(data, source=source)


def config_to_argv(config: RunConfig) -> list[str]:
    """The flags that reproduce ``config`` (only values that differ from the defaults)."""
    argv: list[str] = []
    for spec in field_specs():
        value = getattr(config, spec.name)
        if value == spec.default:
            continue
        flag = spec.flag
        if spec.kind == "weights":
            argv += [item for name, weight in value.items() for item in (flag, f"{name}={float(weight)}")]
        elif spec.kind == "mapping":
            for key, item in value.items():
                argv += [flag, f"{key}={json.dumps(item)}"]
        elif spec.kind == "list":
            argv += [word for item in value for word in (flag, str(item))]
        elif spec.kind == "json":
            argv += [flag, json.dumps(value)]
        elif spec.kind == "bool":
            argv.append(flag if value else "--no-" + flag[2:])
        else:
            argv += [flag, "none" if value is None else str(value)]
    return argv


__all__ = ["ConfigError", "add_run_config_arguments", "config_from_args", "config_to_argv"]
