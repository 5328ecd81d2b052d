"""Standalone tools for a dataset + reward-function run (``--tools standalone_tools.py:check_availability,book_room``),
named as the demo agent's so that the tiny model calls them, and a reward function that pays for an
answered tool call. Every call is appended to $TOOLS_LOG (a JSONL path) when it is set."""

from __future__ import annotations

import json
import os


def _log(record: dict) -> None:
    path = os.environ.get("TOOLS_LOG")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(record) + "\n")


def check_availability(room: str) -> str:
    """Say how many rooms of a type are free and what one night costs.

    Args:
        room: The room type: cheap, large or city.
    """
    _log({"tool": "check_availability", "room": room})
    return f"2 {room} rooms free, 80 a night"


def book_room(room: str, nights: int) -> str:
    """Book a room for the guest.

    Args:
        room: The room type: cheap, large or city.
        nights: How many nights the guest stays.
    """
    _log({"tool": "book_room", "room": room, "nights": nights})
    return f"booked a {room} room for {nights} nights"


def answered_a_tool_call(prompts, completions, **kwargs) -> list[float]:
    return [1.0 if any(m.get("role") == "tool" for m in c) else 0.0 for c in completions]
