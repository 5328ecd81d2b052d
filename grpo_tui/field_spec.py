"""FieldSpec: what the CLI, the form and the docs need to know about one RunConfig field, derived once.

The kind of a field comes from its type annotation (``typing.get_type_hints``, ``get_origin``,
``get_args``), never from matching annotation text, and a choice field's allowed values are the
arguments of its ``Literal``. Whether a field is required is its ``required`` metadata in config/run_config.py,
and nowhere else. So ``--help``, the launch form and docs/configuration.md read one table and cannot
disagree; a new field whose type has no kind here fails loudly at the first ``field_specs()`` call.

Stdlib only, like the rest of the contract layer.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import types
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from trainer_core.contract.config.checks import parse_env_config
from trainer_core.contract.config.run_config import ConfigError, RunConfig, flag_for

FieldKind = Literal["bool", "int", "float", "str", "choice", "json", "mapping", "weights", "list"]
"""How a field's value is typed in and shown:

- ``bool``, ``int``, ``float``, ``str``: a plain value (``int``/``str`` may be optional, typed as none);
- ``choice``: one of a ``Literal``'s values;
- ``json``: an optional JSON object given whole (``dict[str, Any] | None``: rl_env_config);
- ``mapping``: a JSON object built from repeatable ``KEY=VALUE`` flags (``dict[str, Any]``);
- ``weights``: names with a number each, from repeatable ``NAME[=WEIGHT]`` flags (``dict[str, float]``);
- ``list``: strings without whitespace, from a repeatable flag (``list[str]``: notify's URLs); the form takes
  them whitespace-separated (one per line, or several on one).
"""

FIELD_KINDS: tuple[FieldKind, ...] = get_args(FieldKind)
JSON_KINDS: tuple[FieldKind, ...] = ("json", "mapping", "weights")
"""Kinds whose value is a JSON object (the form edits them as JSON text)."""

_NONE_WORDS = ("none", "null")
_SCALARS: dict[Any, FieldKind] = {bool: "bool", int: "int", float: "float", str: "str"}


@dataclass(frozen=True)
class FieldSpec:
    """One RunConfig field: its kind, flag, help text, default and allowed values."""

    name: str
    kind: FieldKind
    help: str
    group: str
    flag: str
    default: Any
    """The default value (shared: use ``default_value()`` for one to keep or change)."""
    optional: bool = False
    """None is a value of the field (shown and typed as 'none')."""
    required: bool = False
    """A run cannot start without it (its default is shown as 'required')."""
    required_unless: str = ""
    """What may stand in for a required field, e.g. 'a dataset' (shown as 'required (or a dataset)')."""
    choices: tuple[str, ...] = ()
    """The allowed values of a choice field, in the order of its Literal."""
    metavar: str = ""
    """What ``--help`` calls one value of the flag ('' for the field's name in capitals)."""

    @property
    def required_text(self) -> str:
        """'required', 'required (or a dataset)', or '' for a field with a default."""
        if not self.required:
            return ""
        return f"required (or {self.required_unless})" if self.required_unless else "required"

    @property
    def is_json(self) -> bool:
        return self.kind in JSON_KINDS

    def default_value(self) -> Any:
        """A fresh copy of the default (a mapping default is not shared with other configs)."""
        return copy.deepcopy(self.default)

    def parse(self, raw: Any) -> Any:
        """A form widget's value (a switch's bool, a select's choice, else text) as the field's value;
        ConfigError naming the field when it is not one."""
        if self.kind in ("bool", "choice"):
            return raw
        text = str(raw).strip()
        if self.kind == "list":
            return text.split()
        if self.kind == "json":  # rl_env_config, the one object given whole: its own messages
            return parse_env_config(text)
        if self.is_json:
            if not text:
                return {}
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(
                    self.name,
                    f"{self.name} must be a JSON object, got {text!r} ({exc.msg} at line "
                    f'{exc.lineno} column {exc.colno}). Example: {{"key": 1}}',
                ) from None
            if not isinstance(value, dict):
                raise ConfigError(self.name, f"{self.name} must be a JSON object, got {type(value).__name__} {text}.")
            return value
        if not text or (self.optional and text.lower() in _NONE_WORDS):
            if self.optional:
                return None
            if self.kind == "str":
                return ""
            wanted = "an integer" if self.kind == "int" else "a number"
            raise ConfigError(self.name, f"{self.name} needs a value: {wanted}.")
        if self.kind == "int":
            try:
                return int(text)
            except ValueError:
                raise ConfigError(self.name, f"{self.name} must be an integer, got {text!r}.") from None
        if self.kind == "float":
            try:
                return float(text)
            except ValueError:
                raise ConfigError(self.name, f"{self.name} must be a number, got {text!r}.") from None
        return text

    def format(self, value: Any) -> Any:
        """The form widget's value that shows ``value``: a bool, a choice, or text ('' for none)."""
        if self.kind == "bool":
            return bool(value)
        if self.kind == "choice":
            return value
        if self.is_json:
            return "" if value is None or value == {} else json.dumps(value)
        if self.kind == "list":
            return " ".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value or "")
        return "" if value is None else str(value)


def _kind(name: str, annotation: Any) -> tuple[FieldKind, bool, tuple[str, ...]]:
    """(kind, optional, choices) of a field from its resolved type annotation."""
    base, optional = annotation, False
    if get_origin(annotation) in (Union, types.UnionType):
        args = get_args(annotation)
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(rest) < len(args):
            base, optional = rest[0], True
    if base in _SCALARS:
        return _SCALARS[base], optional, ()
    origin = get_origin(base)
    if origin is Literal:
        return "choice", optional, tuple(str(a) for a in get_args(base))
    if origin is list and get_args(base) == (str,):
        return "list", optional, ()
    if origin is dict:
        value_type = get_args(base)[1] if get_args(base) else Any
        if value_type is float:
            return "weights", optional, ()
        return ("json" if optional else "mapping"), optional, ()
    raise TypeError(f"RunConfig.{name}: no field kind for its type {annotation!r}; add one to grpo_tui/field_spec.py.")


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


@functools.cache
def field_specs() -> tuple[FieldSpec, ...]:
    """Every RunConfig field's spec, in field order."""
    hints = get_type_hints(RunConfig)
    specs = []
    for f in dataclasses.fields(RunConfig):
        kind, optional, choices = _kind(f.name, hints[f.name])
        specs.append(
            FieldSpec(
                name=f.name,
                kind=kind,
                help=f.metadata["help"],
                group=f.metadata["group"],
                flag=flag_for(f),
                default=_default(f),
                optional=optional,
                required=f.metadata.get("required", False),
                required_unless=f.metadata.get("required_unless", ""),
                choices=choices,
                metavar=f.metadata.get("metavar", ""),
            )
        )
    return tuple(specs)


def field_spec(name: str) -> FieldSpec:
    """The spec of field ``name``; KeyError for a name RunConfig does not have."""
    for spec in field_specs():
        if spec.name == name:
            return spec
    raise KeyError(name)


__all__ = ["FIELD_KINDS", "JSON_KINDS", "FieldKind", "FieldSpec", "field_spec", "field_specs"]
