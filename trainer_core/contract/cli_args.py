"""Command-line flags generated from RunConfig, so ``--help``, the form and the docs share one source.

Stdlib only. Flags given on the command line override values from ``--config FILE``; only flags the user
actually typed override anything (argparse defaults are suppressed and shown in the help text instead).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .config import ConfigError, RunConfig, config_fields, flag_for, load_file, load_text

MAPPING_FIELDS = ("grpo_args", "health", "slurm")

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


def _optional_int(text: str) -> int | None:
    return None if text.lower() in ("none", "null", "") else int(text)


def _optional_str(text: str) -> str | None:
    return None if text.lower() in ("none", "null", "") else text


def _type_for(annotation: str):
    base = annotation.replace(" | None", "")
    if base == "bool":
        return None
    if base == "int":
        return _optional_int if "None" in annotation else int
    if base == "float":
        return float
    return _optional_str if "None" in annotation else str


def add_run_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --config and one flag per RunConfig field, grouped as in the form."""
    parser.add_argument("--config", metavar="FILE",
                        help="YAML or JSON config file ('-': read it from stdin); flags given here override it.")
    groups: dict[str, argparse._ArgumentGroup] = {}
    for f in config_fields():
        group_name = f.metadata["group"]
        group = groups.get(group_name) or parser.add_argument_group(GROUP_TITLES[group_name])
        groups[group_name] = group
        default = f.default if f.default is not __import__("dataclasses").MISSING else f.default_factory()
        shown = "required" if f.name in ("model", "rl_env_module", "rl_env_class") else json.dumps(default)
        choices = f" One of: {', '.join(f.metadata['choices'])}." if "choices" in f.metadata else ""
        help_text = f"{f.metadata['help']}{choices} (default: {shown})"
        kwargs: dict[str, Any] = {"dest": f.name, "default": argparse.SUPPRESS, "help": help_text}
        if f.name in MAPPING_FIELDS:
            group.add_argument(flag_for(f), type=_key_value, action="append", metavar="KEY=VALUE", **kwargs)
        elif f.name == "rl_env_config":
            group.add_argument(flag_for(f), metavar="JSON", **kwargs)
        elif f.type == "bool":
            group.add_argument(flag_for(f), action=argparse.BooleanOptionalAction, **kwargs)
        else:
            group.add_argument(flag_for(f), type=_type_for(f.type), metavar=f.name.upper(), **kwargs)


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """Merge ``--config FILE`` with the flags given; raise ConfigError naming the bad key or value."""
    data: dict[str, Any] = {}
    if getattr(args, "config", None) == "-":
        data.update(load_text(sys.stdin.read(), "stdin"))
        source = "stdin"
    elif getattr(args, "config", None):
        data.update(load_file(args.config))
        source = args.config
    else:
        source = "config"
    names = {f.name for f in config_fields()}
    for name in names:
        if hasattr(args, name):
            value = getattr(args, name)
            if name in MAPPING_FIELDS:
                value = {**data.get(name, {}), **dict(value)}
            data[name] = value
    return RunConfig.from_dict(data, source=source)


def config_to_argv(config: RunConfig) -> list[str]:
    """The flags that reproduce ``config`` (only values that differ from the defaults)."""
    argv: list[str] = []
    defaults = RunConfig()
    for f in config_fields():
        value = getattr(config, f.name)
        if value == getattr(defaults, f.name):
            continue
        flag = flag_for(f)
        if f.name in MAPPING_FIELDS:
            for key, item in value.items():
                argv += [flag, f"{key}={json.dumps(item)}"]
        elif f.name == "rl_env_config":
            argv += [flag, json.dumps(value)]
        elif f.type == "bool":
            argv.append(flag if value else "--no-" + flag[2:])
        else:
            argv += [flag, "none" if value is None else str(value)]
    return argv


__all__ = ["add_run_config_arguments", "config_from_args", "config_to_argv", "ConfigError"]
