"""Settings that are valid but far outside their usual range: worth a warning before a launch, not a refusal.

A learning rate of 4.0 passes every check (it is > 0), and a keystroke lost from "4e-5" makes one: the run then
diverges in its first steps. The checks (``checks.py``) say what is typical in their messages; the same ranges
live here, once, with how far a value may stray before the form warns (``FAR``: a thousand times, so a LoRA rate
or a tiny demo model's 2e-3 passes, and 4.0 does not). The form shows the warning under the field as you type
and asks before it launches; nothing is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainer_core.contract.run.json_values import is_number

FAR = 1000.0  # how many times beyond the usual range a value is "far outside" it


def short(value: float) -> str:
    """A number as a person writes it: 1e-6, 4e-05 as 4e-5, 2.5."""
    return re.sub(r"e([+-])0*(\d)", r"e\1\2", f"{value:g}").replace("e+", "e")


@dataclass(frozen=True)
class Usual:
    low: float
    high: float
    context: str  # what the range is typical of

    @property
    def text(self) -> str:
        return f"{short(self.low)} to {short(self.high)} is typical {self.context}"

    def far(self, value: float) -> bool:
        return value > self.high * FAR or 0 < value < self.low / FAR


USUAL = {"lr": Usual(1e-6, 1e-5, "for full fine-tuning")}
"""The fields with a usual range: the check of ``lr`` names it in its message too."""


@dataclass(frozen=True)
class Unusual:
    """A setting far outside its usual range: the field, its value and what is usual."""

    field: str
    value: float
    usual: Usual

    def __str__(self) -> str:
        side = "above" if self.value > self.usual.high else "below"
        return (
            f"{self.field} is {short(self.value)}, more than {FAR:g} times {side} its usual range "
            f"({self.usual.text}): check it before launching."
        )


def unusual_values(config) -> list[Unusual]:
    """The settings of ``config`` (a RunConfig) far outside their usual range, in field order."""
    found = []
    for name, usual in USUAL.items():
        value = getattr(config, name, None)
        if is_number(value) and usual.far(value):
            found.append(Unusual(name, float(value), usual))
    return found
