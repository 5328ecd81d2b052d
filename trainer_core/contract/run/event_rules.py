"""What each field of an event must hold for a reader to use it, and the judgement of one line's object by them.

A reader that takes a line's ``"step": "x"``, ``"reward": "NaN"`` or ``"time": "soon"`` as it is shows a step that
is not a number, charts a string, or ends on a sum; a ``metrics`` line appended to a finished run with such
fields would read as one more step. So every field of every event type carries its ``Rule`` (``checked`` in
``events.py``, beside the field it checks) and ``judge`` refuses a line whose field breaks it, naming the field,
the rule and the value; every reader of events.jsonl (the monitor's stream, its fast path's fallback, the end
check of ``grpo-tui runs``, the catalog) goes through ``events.decode`` or ``events.problem``, which call it. The
values themselves are checked by ``json_values``, the one module of such checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from trainer_core.contract.run.json_values import NUMBER, Rule, is_number, list_of, text, whole

STEP = whole(0, words="a whole number, 0 or more")
COUNT = STEP
TEXT = text(words="text")
NAMES = list_of(TEXT, words="a list of names")
TIME = NUMBER.or_null()  # unix seconds
VALUE = NUMBER.or_null()  # a logged value: null is how a NaN or infinity is written, and what TRL logs for all-NaN
STATS = Rule(  # an eval's metrics: {NAME: {STAT: number or null}}
    lambda v: (
        isinstance(v, dict) and all(isinstance(s, dict) and all(map(VALUE.accepts, s.values())) for s in v.values())
    ),
    "an object of statistics (each an object of numbers or null)",
)
CHANGES = Rule(  # a rewind's or a leg's changed settings: {SETTING: {"from": OLD, "to": NEW}}
    lambda v: isinstance(v, dict) and all(isinstance(c, dict) and "from" in c and "to" in c for c in v.values()),
    'an object of changes (each {"from": OLD, "to": NEW})',
)
RULE = "rule"  # a field's metadata key for its Rule
VALUED = ("metrics", "summary")  # types whose values are spread flat beside their step


def checked(rule: Rule, default: Any = None, *, factory: Any = None) -> Any:
    """A dataclass field that ``judge`` reads only when its value passes ``rule`` (null: absent, its default)."""
    if factory is not None:
        return field(default_factory=factory, metadata={RULE: rule})
    return field(default=default, metadata={RULE: rule})


def _wrong(key: str, rule: Rule, value: Any) -> str:
    return f"{key[:40]} must be {rule.expected}; got {str(value)[:40]!r}"


def judge(record: dict, rules: Mapping[str, tuple[tuple[str, Rule], ...]]) -> str | None:
    """Why ``record`` is no event, or None. Its ``time`` must be a number or null; a metrics or summary event's
    ``step`` must be a whole number (or absent) and each of its values a number or null; a known type's every
    field with a rule in ``rules`` must pass it when present and not null. A type this version does not know is
    judged by its time alone."""
    stamp = record.get("time")
    if stamp is not None and not is_number(stamp):
        return _wrong("time", TIME, stamp)
    kind = record.get("type")
    if kind in VALUED:
        step = record.get("step", 0)
        if not STEP.accepts(step):
            return _wrong("step", STEP, step)
        for key, value in record.items():
            if value is not None and not is_number(value) and key != "type":
                return _wrong(key, VALUE, value)
        return None
    for key, rule in rules.get(kind, ()) if isinstance(kind, str) else ():
        value = record.get(key)
        if value is not None and not rule.accepts(value):
            return _wrong(key, rule, value)
    return None
