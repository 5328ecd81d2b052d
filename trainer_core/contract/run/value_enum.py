"""The base of the format's enums: members that are their string values on disk, in f-strings and in dicts."""

from __future__ import annotations

from enum import Enum


class ValueEnum(str, Enum):
    def __str__(self) -> str:
        return self.value

    def __hash__(self) -> int:  # hashes as its value, so it finds and is found by plain strings
        return str.__hash__(self.value)

    @classmethod
    def parse(cls, value: object, default=None):
        """The member ``value`` names, else ``default`` (a missing or unknown value in a file)."""
        try:
            return cls(value)
        except ValueError:
            return default
