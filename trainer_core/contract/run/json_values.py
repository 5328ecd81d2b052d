"""The checks a JSON value passes before code trusts its type: one place for every reader of outside input.

Values come from files a writer of another version, a hand edit or a broken disk may have changed (events.jsonl,
state.json, a summary, config.yaml) and from hosts that may send anything (``grpo_tui/services/records``). JSON
has one kind of number, and Python's ``bool`` is an ``int``: ``isinstance(True, int)`` holds, so "a number" spelled
inline lets ``true`` through as 1, and "a float" lets NaN through as a value no chart or sum survives. Each check
is written here once, as a predicate a hot loop can call (``is_number``, ``is_whole``, ``is_text``) and as a
``Rule``, the same check with the words an error shows (``a whole number from 0 to 100``), so a refusal names the
field, the value and what was expected in the same terms wherever it is made. Stdlib only: the trainer, the app
and the wire share it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard


def is_number(value: object) -> TypeGuard[float]:
    """A finite number: an int or a float, not a bool, not NaN or infinite (an int of any size is finite)."""
    if type(value) is float:  # the common case first: the health rules ask this of every metric, every step
        return math.isfinite(value)
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def all_numbers(values: Iterable[object]) -> bool:
    """Whether every value is a finite number (``is_number``), floats checked inline: the health rules ask it of
    each window they read, every step."""
    for value in values:
        if type(value) is float:
            if not math.isfinite(value):
                return False
        elif not is_number(value):
            return False
    return True


def is_whole(value: object, low: int | None = 0, high: int | None = None) -> TypeGuard[int]:
    """A whole number (an int, not a bool) from ``low`` to ``high`` (None: unbounded on that side)."""
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (low is None or value >= low)
        and (high is None or value <= high)
    )


def is_text(value: object, max_chars: int | None = None) -> TypeGuard[str]:
    """A string of at most ``max_chars`` characters (None: any length)."""
    return isinstance(value, str) and (max_chars is None or len(value) <= max_chars)


def is_flag(value: object) -> TypeGuard[bool]:
    """``true`` or ``false``: a bool, not 0 or 1."""
    return isinstance(value, bool)


def is_number_or_null(value: object) -> bool:
    """A finite number or None (JSON null: how a non-finite value is written, and what TRL logs for all-NaN)."""
    return value is None or is_number(value)


def number_or_none(value: object) -> float | None:
    """``value`` when it is a finite number, else None."""
    return value if is_number(value) else None


def whole_or_none(value: object, low: int | None = 0, high: int | None = None) -> int | None:
    """``value`` when it is a whole number from ``low`` to ``high``, else None."""
    return value if is_whole(value, low, high) else None


def text_or_none(value: object, max_chars: int | None = None) -> str | None:
    """``value`` when it is a string of at most ``max_chars`` characters, else None."""
    return value if is_text(value, max_chars) else None


def shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters: how a refused value is named in an error."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Rule:
    """A check with the words an error says it in: ``accepts(value)``, and ``expected`` (``a finite number >= 0``).

    ``nullable``: None passes too, and ``expected`` ends ``or null``. ``schema``: the same check as JSON Schema,
    where one says it (what ``json_schema`` publishes)."""

    test: Callable[[Any], bool]
    words: str
    nullable: bool = False
    schema: Mapping[str, Any] | None = field(default=None, compare=False)

    def accepts(self, value: Any) -> bool:
        return (value is None and self.nullable) or self.test(value)

    @property
    def expected(self) -> str:
        return self.words + (" or null" if self.nullable else "")

    def or_null(self) -> Rule:
        return Rule(self.test, self.words, nullable=True, schema=self.schema)

    def json_schema(self) -> dict[str, Any] | None:
        """The rule as JSON Schema (null allowed when it is nullable), or None when it has none."""
        if self.schema is None:
            return None
        out = dict(self.schema)
        if not self.nullable:
            return out
        if isinstance(out.get("type"), str):
            return {**out, "type": [out["type"], "null"]}
        return {"anyOf": [out, {"type": "null"}]}

    def problem(self, value: Any) -> str | None:
        """Why ``value`` fails the rule (``expected …, got …``), or None when it passes."""
        return None if self.accepts(value) else f"expected {self.expected}, got {shown(value)}"


def number(minimum: float | None = None) -> Rule:
    """A finite number, at least ``minimum`` when one is given."""
    if minimum is None:
        return NUMBER
    return Rule(
        lambda v: is_number(v) and v >= minimum,
        f"a finite number >= {minimum:g}",
        schema={"type": "number", "minimum": minimum},
    )


def whole(low: int = 0, high: int | None = None, words: str | None = None) -> Rule:
    """A whole number from ``low`` to ``high`` (None: no upper bound); ``words`` says it otherwise."""
    if words is None:
        words = f"a whole number from {low}" + ("" if high is None else f" to {high}")
    bounds = {"minimum": low} if high is None else {"minimum": low, "maximum": high}
    return Rule(lambda v: is_whole(v, low, high), words, schema={"type": "integer", **bounds})


def text(max_chars: int | None = None, words: str | None = None) -> Rule:
    """A string of at most ``max_chars`` characters (None: any length)."""
    if words is None:
        words = "a string" if max_chars is None else f"a string of at most {max_chars} characters"
    bound = {} if max_chars is None else {"maxLength": max_chars}
    return Rule(lambda v: is_text(v, max_chars), words, schema={"type": "string", **bound})


def list_of(item: Rule, max_items: int | None = None, words: str | None = None) -> Rule:
    """A list (of at most ``max_items``) whose every item passes ``item``."""
    bounded = "" if max_items is None else f"at most {max_items} "
    return Rule(
        lambda v: isinstance(v, list) and (max_items is None or len(v) <= max_items) and all(map(item.accepts, v)),
        words or f"a list of {bounded}items, each {item.expected}",
        schema=None
        if item.schema is None
        else {"type": "array", "items": item.json_schema(), **({} if max_items is None else {"maxItems": max_items})},
    )


NUMBER = Rule(is_number, "a finite number", schema={"type": "number"})
FLAG = Rule(is_flag, "true or false", schema={"type": "boolean"})
OBJECT = Rule(lambda v: isinstance(v, dict), "an object", schema={"type": "object"})
LIST = Rule(lambda v: isinstance(v, list), "a list", schema={"type": "array"})
