"""How serious a health warning or an inspection flag is: one ordered enum for every producer and reader."""

from __future__ import annotations

from trainer_core.contract.run.value_enum import ValueEnum


class Severity(ValueEnum):
    INFO = "info"
    WARN = "warn"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _ORDER.index(self)

    @property
    def alarming(self) -> bool:
        """warn and critical: counted in run lists, shown as markers, able to stop a run."""
        return self is not Severity.INFO


_ORDER = (Severity.INFO, Severity.WARN, Severity.CRITICAL)
