"""A hotel-booking agent that books through real tools, called while the model generates.

The agentic counterpart of ``hotel_env.py``: instead of advertising tool schemas in the prompt and playing
the episode out inside ``score_episode``, this environment hands grpo-tui its tools
(``get_tool_functions``), and TRL calls them during generation. The model asks for a room type and a
number of nights; a tool call goes to ``check_availability`` or ``book_room`` of a small in-memory hotel,
the result comes back as a ``tool`` turn, and the model writes its next turn, up to the run's
``max_tool_calls``. One instance plays one episode at a time: ``reset(**row)`` sets up the hotel for the
row's request, and ``get_reward`` scores what was booked.

Partial credit keeps GRPO's groups apart: the right room for the right nights is 1.0, the right room for
other nights 0.6, a booking of another room 0.2, and checking the requested room without booking 0.2. Each call
the hotel refuses (a second booking, a room that is full, a room type it has not) costs 0.25 of that, so an
episode that books and then books again earns less than one that stops.
Held-out requests (``build_eval_dataset``) are ones the training set never asks for (another draw, each
request's text absent from the training rows); the held-out task metric (``eval_metrics``) is
``booked_right``: the episode booked the requested room for the requested nights. The eval also reports
``tool_success``, the share of episodes whose tool calls all succeeded.
The demo (``grpo-tui demo --agent``) trains the tiny model on it; ``examples/hotel_agent_env.py`` links here.
"""

from __future__ import annotations

import random

from datasets import Dataset

from trainer_core.commands.demo_prompts import PRICES, REQUESTS, ROOMS

# the rooms, prices and requests the tiny demo model was pre-trained on
MAX_NIGHTS = 14

CREDIT_BOOKED = 1.0
CREDIT_OTHER_NIGHTS = 0.6
CREDIT_OTHER_ROOM = 0.2
CREDIT_CHECKED = 0.2
REFUSED_CALL_COST = 0.25  # taken off the credit for each call the hotel refuses (booking twice, a full room...)


def hotel_requests(num_requests: int, seed: int = 0) -> list[dict]:
    """Rows of the task: a request, the room and nights it asks for, and how many rooms of each type are free
    (the requested type always has one; one other type is sold out)."""
    rng = random.Random(seed)
    rows = []
    for i in range(num_requests):
        room, nights = rng.choice(ROOMS), rng.randint(1, 7)
        sold_out = rng.choice([r for r in ROOMS if r != room])
        free = [0 if r == sold_out else rng.randint(1, 3) for r in ROOMS]
        request = REQUESTS[i % len(REQUESTS)].format(room=room, nights=nights)
        rows.append({"request": request, "room": room, "nights": nights, "free": free})
    return rows


def _as_dataset(rows: list[dict]) -> Dataset:
    return Dataset.from_list([{"prompt": [{"role": "user", "content": r["request"]}], **r} for r in rows])


def _room_type(room: str) -> str:
    name = str(room).strip().lower()
    if name not in ROOMS:
        raise ValueError(f"unknown room type {room!r}: the hotel has {', '.join(ROOMS)} rooms")
    return name


class HotelAgentEnv:
    """Book the room a guest asks for, through the hotel's check_availability and book_room tools."""

    def __init__(self, num_requests: int = 64, seed: int = 0, num_eval_requests: int = 0):
        self.num_requests = num_requests
        self.seed = seed
        self.num_eval_requests = num_eval_requests
        self.reset(room="cheap", nights=1, free=[1, 1, 1])

    def build_dataset(self, tokenizer=None) -> Dataset:
        return _as_dataset(hotel_requests(self.num_requests, self.seed))

    def build_eval_dataset(self, tokenizer=None) -> Dataset | None:
        """``num_eval_requests`` requests the training rows never make: another draw, without any request text
        trained on; none (no held-out set) unless the config asks for some."""
        if not self.num_eval_requests:
            return None
        trained = {r["request"] for r in hotel_requests(self.num_requests, self.seed)}
        rows, seen = [], set(trained)
        for row in hotel_requests(20 * self.num_eval_requests, self.seed + 1):
            if row["request"] not in seen:
                seen.add(row["request"])
                rows.append(row)
        return _as_dataset(rows[: self.num_eval_requests])

    def eval_metrics(self, completion: str, room: str, nights: int, **row) -> dict[str, float]:
        """``booked_right``: this episode's booking is the requested room for the requested nights."""
        return {"booked_right": float(self.booking == (str(room), int(nights)))}

    def get_tool_functions(self) -> list:
        return [self.check_availability, self.book_room]

    def reset(self, **row) -> None:
        """A fresh hotel for the row's request: nothing checked, nothing booked."""
        self.room = str(row["room"])
        self.nights = int(row["nights"])
        self.free: dict[str, int] = dict(zip(ROOMS, (int(n) for n in row["free"])))
        self.checked: set[str] = set()
        self.booking: tuple[str, int] | None = None
        self.refused = 0

    def check_availability(self, room: str) -> str:
        """Say how many rooms of a type are free and what one night costs.

        Args:
            room: The room type: cheap, large or city.
        """
        name = self._known(room)
        self.checked.add(name)
        if not self.free[name]:
            return f"no {name} room is free"
        return f"{self.free[name]} {name} rooms free, {PRICES[name]} a night"

    def book_room(self, room: str, nights: int) -> str:
        """Book a room for the guest.

        Args:
            room: The room type: cheap, large or city.
            nights: How many nights the guest stays.
        """
        name = self._known(room)
        if self.booking is not None:
            self._refuse(f"a {self.booking[0]} room is already booked for this guest")
        if not self.free[name]:
            self._refuse(f"no {name} room is free")
        if isinstance(nights, bool) or not isinstance(nights, int) or not 1 <= nights <= MAX_NIGHTS:
            self._refuse(f"nights must be a whole number from 1 to {MAX_NIGHTS}, got {nights!r}")
        self.free[name] -= 1
        self.booking = (name, nights)
        return f"booked a {name} room for {nights} nights, {PRICES[name] * nights} in all"

    def _known(self, room: str) -> str:
        try:
            return _room_type(room)
        except ValueError as error:
            self._refuse(str(error))
            raise

    def _refuse(self, message: str):
        self.refused += 1
        raise ValueError(message)

    def get_reward(self) -> float:
        """What the episode earned: the booking against the request, or a check of the requested room, less
        ``REFUSED_CALL_COST`` for each call the hotel refused."""
        credit = CREDIT_CHECKED if self.room in self.checked else 0.0
        if self.booking is not None:
            room, nights = self.booking
            if room != self.room:
                credit = CREDIT_OTHER_ROOM
            else:
                credit = CREDIT_BOOKED if nights == self.nights else CREDIT_OTHER_NIGHTS
        return max(0.0, credit - REFUSED_CALL_COST * self.refused)
