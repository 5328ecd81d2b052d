"""The fast path of the monitor's stream: metrics lines decoded by msgspec into small typed records.

A long run's events.jsonl is almost all ``metrics`` lines. Parsing each into a dict (orjson), then taking every
charted value out of every dict, is most of what opening a 100k-step run costs. msgspec decodes a line straight
into a record of the fields the stream has seen, checking each field's kind on the way, without building a
dict or a key string; the stream then takes each charted column from the records at once (``run_stream.py``).

What it accepts is exactly what the reference path accepts (``events.problem``, with the rules of
``event_rules.py``), with the same values: a line alone (one call per line, so a line is one JSON value or
none), a JSON object whose ``type`` is ``metrics``, whose ``step`` is a whole number from 0 to 2**63 - 1 (absent:
0), whose ``time`` and every value are numbers or null (never text, true or false: a ``"reward": "NaN"`` is no
step; decoded, so invalid UTF-8 or a number out of a double's range is refused as orjson refuses it), and whose
keys the stream has seen before (``forbid_unknown_fields``).
Anything else returns None and the line goes the reference way (``EventTail.parse`` and ``events.decode``),
which names and counts what it rejects: a bad line costs only itself a second parse, and a line with a new key
teaches it (``learn``) so the next ones are fast again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Annotated, Any, Literal

import msgspec

RESERVED = ("type", "step", "time")  # a metrics line's own fields, beside its values
MAX_KEYS = 512  # a stream with more distinct keys than this is read the reference way only
Step = Annotated[int, msgspec.Meta(ge=0, le=(1 << 63) - 1)]  # a step the series can hold (signed 64-bit)
Number = float | None  # msgspec's float takes JSON integers too (not true or false), as event_rules.VALUE does
UNSET = msgspec.UNSET  # a key the line does not have
step_of = attrgetter("k_step")
time_of = attrgetter("k_time")


class MetricsLines:
    """Decodes one line into a record of the keys taught so far, or None (the line goes the reference way).

    ``columns``: ``(key, getter)`` of each charted key, in the order taught. Pickled as its keys alone (the
    backlog child sends the stream back; the record class is made anew)."""

    def __init__(self, charted: Callable[[str], bool], keys: Iterable[str] = ()):
        self.charted = charted
        self.keys: dict[str, None] = {}
        self.columns: list[tuple[str, Callable[[Any], Any]]] = []
        self.decode: Callable[[bytes], Any] | None = None
        self.learn(keys, build=True)

    def teaches(self, record: dict) -> bool:
        """Whether a metrics line read the reference way has keys this does not know yet."""
        return self.decode is not None and record.get("type") == "metrics" and not self.keys.keys() >= record.keys()

    def learn(self, keys: Iterable[str], build: bool = False) -> None:
        """Take the keys of a metrics line the stream has folded; new ones make a new record type."""
        if self.keys and self.decode is None:
            return  # past MAX_KEYS: no more records
        new = [key for key in keys if key not in self.keys]
        if not new and not build:
            return
        self.keys.update(dict.fromkeys(new))
        if len(self.keys) > MAX_KEYS:
            self.decode, self.columns = None, []
            return
        fields: list[tuple[str, Any, Any]] = [("k_type", Literal["metrics"], msgspec.NODEFAULT)]
        fields += [("k_step", Step, 0), ("k_time", Number, UNSET)]
        rename = {"k_type": "type", "k_step": "step", "k_time": "time"}
        columns = []
        for index, key in enumerate(self.keys):
            if key in RESERVED or not fits(key):  # a line with a key msgspec cannot name goes the reference way
                continue
            name = f"v{index}"
            fields.append((name, Number, UNSET))
            rename[name] = key
            if self.charted(key):
                columns.append((key, attrgetter(name)))
        try:
            record = msgspec.defstruct("MetricsLine", fields, rename=rename, forbid_unknown_fields=True, gc=False)
        except (TypeError, ValueError):  # any other key msgspec refuses: the reference way from now on
            self.decode, self.columns = None, []
            return
        self.decode, self.columns = msgspec.json.Decoder(record).decode, columns

    def __getstate__(self) -> dict:
        return {"charted": self.charted, "keys": list(self.keys)}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["charted"], state["keys"])


REFUSED = (msgspec.DecodeError, RecursionError)  # a ValidationError is a DecodeError


def fits(key: str) -> bool:
    """Whether msgspec can name a field ``key``: no backslash, no double quote, no control character."""
    return '"' not in key and "\\" not in key and not any(ord(c) < 32 for c in key)
