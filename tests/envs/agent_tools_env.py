"""The demo's hotel agent (grpo_tui/resources/demo/hotel_agent_env.py) with every tool call written to a log
file (``log``: a JSONL path; empty: none), so tests see which arguments TRL parsed and what each call
answered, from the training process itself. ``hang_every``: every Nth ``book_room`` call of the process
never returns (it sleeps forever), as a tool stuck on a dead service does; ``close()`` is logged too."""

from __future__ import annotations

import importlib.util
import itertools
import json
import threading
from pathlib import Path

_DEMO = Path(__file__).resolve().parents[2] / "grpo_tui" / "resources" / "demo" / "hotel_agent_env.py"
_spec = importlib.util.spec_from_file_location("hotel_agent_env_for_tests", _DEMO)
assert _spec and _spec.loader
_demo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_demo)


_BOOKINGS = itertools.count(1)


class ToolHotel(_demo.HotelAgentEnv):
    def __init__(self, log: str = "", num_requests: int = 64, seed: int = 0, hang_every: int = 0):
        super().__init__(num_requests=num_requests, seed=seed)
        self.log = log
        self.hang_every = hang_every

    def close(self) -> None:
        self._write({"closed": id(self)})

    def _write(self, record: dict) -> None:
        if self.log:
            with open(self.log, "a") as out:
                out.write(json.dumps(record) + "\n")

    def check_availability(self, room: str) -> str:
        """Say how many rooms of a type are free and what one night costs.

        Args:
            room: The room type: cheap, large or city.
        """
        try:
            result = super().check_availability(room)
        except Exception as exc:
            self._write({"tool": "check_availability", "arguments": {"room": room}, "error": str(exc)})
            raise
        self._write({"tool": "check_availability", "arguments": {"room": room}, "result": result})
        return result

    def book_room(self, room: str, nights: int) -> str:
        """Book a room for the guest.

        Args:
            room: The room type: cheap, large or city.
            nights: How many nights the guest stays.
        """
        arguments = {"room": room, "nights": nights}
        if self.hang_every and next(_BOOKINGS) % self.hang_every == 0:
            self._write({"tool": "book_room", "arguments": arguments, "hung": True})
            threading.Event().wait()
        try:
            result = super().book_room(room, nights)
        except Exception as exc:
            self._write({"tool": "book_room", "arguments": arguments, "error": str(exc)})
            raise
        self._write({"tool": "book_room", "arguments": arguments, "result": result})
        return result
