"""How a record crosses the wire: each field's JSON key, check, decoding and encoding, written beside the field.

A run's row, a GPU, a host's ``info``, a stop's outcome go out as JSON (``grpo-tui runs --json``, ``info --json``,
``stop --json``, the mirror stream's ``gpus``) and come back from a host that may send anything. A record spelled
three times (the class, a hand-written encoder, a parser) lets the three drift apart, and the JSON a host sends no
longer be the one this side reads; so each field is declared once, with ``wire(...)`` as its dataclass field: the
rule its JSON value must pass (``json_values.Rule``), the key when it is not the field's name, and how the value is
turned into the typed one and back. ``Record`` reads that table to give every record its encoder (``to_wire``: the keys in the fields'
order, which is the byte order of the JSON the commands print) and its decoder (``from_wire``: the typed record,
or ``WireError`` naming the field, the value and what was expected, as ``where.key: expected …, got …``).

The same table is the record's JSON Schema (``json_schema``: each field's rule says its own, a field decoded by
hand gives ``schema=``), which ``docs/answers.schema.json`` publishes.

``Fields`` is the same reading by hand, for the messages whose shape is not one record (the mirror stream's).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NoReturn, TypeVar

from trainer_core.contract.run.json_values import FLAG, Rule, number, shown, text, whole
from trainer_core.contract.run.status import Status

RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}\Z")
RUN_ID_RULE = "a run id (letters, digits, '.', '_', '-'; not starting with '.' or '-'; at most 128 characters)"
APPENDED = ("events.jsonl", "samples.jsonl", "trainer.log")  # copied byte for byte at the host's offsets
MAX_OFFSET = 1 << 40  # 1 TiB: past any run file's size; an offset beyond it is a lie, not a long run
MAX_TEXT = 64 * 1024  # characters in one text field
MAX_ITEMS = 4096  # GPUs, alerts or problems in one message
_STATUSES = ", ".join(s.value for s in Status)

TEXT = text(MAX_TEXT)
TEXT_OR_NULL = TEXT.or_null()
WHOLE = whole(0, MAX_OFFSET)
WHOLE_OR_NULL = WHOLE.or_null()
NUMBER_OR_NULL = number().or_null()
SECONDS = number(0).or_null()  # unix seconds, or a duration
RUN_ID_VALUE = Rule(
    lambda v: isinstance(v, str) and RUN_ID.match(v) is not None,
    RUN_ID_RULE,
    schema={"type": "string", "pattern": "^" + RUN_ID.pattern.removesuffix("\\Z") + "$"},
)
HOST_PATH = Rule(
    lambda v: isinstance(v, str) and 0 < len(v) <= 4096 and "\0" not in v and not v.startswith("-"),
    "a path on the host (a non-empty string, not starting with '-')",
    schema={"type": "string", "minLength": 1, "maxLength": 4096},
)
STATUS = {"enum": [s.value for s in Status]}  # a status's JSON Schema


class WireError(ValueError):
    """What a host sent is not what the format says; the message names the field, the value and the rule."""


def fail(where: str, value: Any, expected: str) -> NoReturn:
    raise WireError(
        f"{where}: expected {expected}, got {shown(value)}" if where else f"expected {expected}, got {shown(value)}"
    )


def within(where: str, key: str) -> str:
    """A field's name in errors: ``key`` inside ``where`` (``gpus[0].index``)."""
    return f"{where}.{key}" if where else key


def checked(value: Any, rule: Rule, where: str) -> Any:
    """``value`` when it passes ``rule``; else WireError naming ``where``."""
    if not rule.accepts(value):
        fail(where, value, rule.expected)
    return value


def parse_run_id(value: Any, where: str = "run_id") -> str:
    """``value`` if it is a run id: one path component that cannot climb out of a folder or look like a flag."""
    return checked(value, RUN_ID_VALUE, where)


def parse_status(value: Any, where: str) -> Status:
    status = Status.parse(value) if isinstance(value, str) else None
    if status is None:
        fail(where, value, f"a status ({_STATUSES})")
    return status


def items(value: Any, where: str, limit: int = MAX_ITEMS) -> list:
    """A JSON list of at most ``limit`` items (null: none)."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > limit:
        fail(where, value, f"a list of at most {limit} items")
    return value


class Fields:
    """Typed reads of one JSON object's fields; ``where`` prefixes the field names in errors."""

    def __init__(self, data: Any, where: str = ""):
        if not isinstance(data, dict):
            fail(where, data, "a JSON object")
        self.data, self.where = data, where

    def name(self, key: str) -> str:
        return within(self.where, key)

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def check(self, key: str, rule: Rule, default: Any = None) -> Any:
        return checked(self.data.get(key, default), rule, self.name(key))

    def whole(self, key: str, *, optional: bool = False, default: Any = None, maximum: int = MAX_OFFSET) -> Any:
        rule = WHOLE if maximum == MAX_OFFSET else whole(0, maximum)
        return self.check(key, rule.or_null() if optional else rule, default)

    def text(self, key: str, *, optional: bool = True, default: Any = None) -> Any:
        return self.check(key, TEXT_OR_NULL if optional else TEXT, default)

    def flag(self, key: str, default: bool = False) -> bool:
        return self.check(key, FLAG, default)

    def items(self, key: str) -> list:
        return items(self.data.get(key), self.name(key))


# -- the field table -------------------------------------------------------------------------------------------

_SPEC = "wire"


@dataclasses.dataclass(frozen=True)
class Spec:
    """One field's entry: ``key`` on the wire; ``rule`` its JSON value passes (``missing``: the value of an absent
    key); ``load(value, where)`` the typed value of a checked one; ``dump(value)`` its JSON; ``sent`` only: written,
    never read (the receiver says it, as a row's ``host``); ``schema`` its JSON Schema when ``rule`` does not say
    it (a field that ``load`` checks)."""

    key: str | None
    rule: Rule | None
    missing: Any
    load: Callable[[Any, str], Any] | None
    dump: Callable[[Any], Any] | None
    sent: bool
    schema: Mapping[str, Any] | None = None


def wire(
    rule: Rule | None = None,
    *,
    key: str | None = None,
    missing: Any = None,
    load: Callable[[Any, str], Any] | None = None,
    dump: Callable[[Any], Any] | None = None,
    sent: bool = False,
    schema: Mapping[str, Any] | None = None,
    default: Any = dataclasses.MISSING,
    factory: Any = dataclasses.MISSING,
) -> Any:
    """A record's dataclass field with its wire entry (``Spec``); ``default``/``factory`` as ``dataclasses.field``'s."""
    spec = Spec(key, rule, missing, load, dump, sent, schema)
    return dataclasses.field(default=default, default_factory=factory, metadata={_SPEC: spec})


def maybe(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``convert`` for a value that may be None (which stays None)."""
    return lambda value: None if value is None else convert(value)


R = TypeVar("R", bound="Record")


def schema_ref(record: type[Record], *, nullable: bool = False) -> dict[str, Any]:
    """A JSON Schema reference to ``record``'s entry in the published document (null too when ``nullable``)."""
    ref = {"$ref": f"#/$defs/{record.schema_name}"}
    return {"anyOf": [ref, {"type": "null"}]} if nullable else ref


def array_schema(items_: Mapping[str, Any] | None, max_items: int = MAX_ITEMS) -> dict[str, Any]:
    return {"type": "array", "items": dict(items_ or {}), "maxItems": max_items}


class Record:
    """A dataclass whose fields are declared with ``wire``: ``to_wire`` and ``from_wire`` read their table."""

    _table: ClassVar[tuple[tuple[str, str, Spec], ...]]
    schema_name: ClassVar[str]  # its entry in docs/answers.schema.json's $defs

    @classmethod
    def table(cls) -> tuple[tuple[str, str, Spec], ...]:
        """``(attribute, key, spec)`` per field, in the fields' order (made once per class)."""
        found = cls.__dict__.get("_table")
        if found is None:
            found = tuple(
                (f.name, f.metadata[_SPEC].key or f.name, f.metadata[_SPEC])
                for f in dataclasses.fields(cls)  # type: ignore[arg-type]  # every Record is a dataclass
                if _SPEC in f.metadata
            )
            cls._table = found
        return found

    @classmethod
    def json_schema(cls, description: str | None = None) -> dict[str, Any]:
        """The JSON Schema of ``to_wire``'s object, read from the table: a field with a default may be absent (a
        host older than it leaves it out), any other is required; no other key."""
        defaults = {
            f.name
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        }
        properties, required = {}, []
        for attr, key, spec in cls.table():
            schema = spec.schema if spec.schema is not None else spec.rule.json_schema() if spec.rule else None
            if schema is None:
                raise TypeError(f"{cls.__name__}.{attr}: its wire() says no schema and its rule none")
            properties[key] = dict(schema)
            if spec.sent or attr not in defaults:
                required.append(key)
        out = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
        return out if description is None else {**out, "description": description}

    def to_wire(self) -> dict:
        """The record's JSON object, its keys in the fields' order."""
        out = {}
        for attr, key, spec in self.table():
            value = getattr(self, attr)
            out[key] = value if spec.dump is None else spec.dump(value)
        return out

    @classmethod
    def from_wire(cls: type[R], data: Any, where: str = "") -> R:
        """The record ``to_wire`` sent (``where``: its place in a larger message, for errors); WireError when a field
        breaks its rule. A field sent only by the other side takes its default."""
        f = Fields(data, where)
        kwargs = {}
        for attr, key, spec in cls.table():
            if spec.sent:
                continue
            name = f.name(key)
            value = f.data.get(key, spec.missing)
            if spec.rule is not None:
                checked(value, spec.rule, name)
            kwargs[attr] = value if spec.load is None else spec.load(value, name)
        return cls(**kwargs)
