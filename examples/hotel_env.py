"""A multi-turn hotel-booking agent task with tools.

Shows what a tool-using environment looks like: the prompt advertises ``search_hotels`` and ``book_hotel``,
and scoring plays the episode out. When the model only searched, the search results go back to it as a
``tool`` message and the live model writes the next turn, until it books or ``max_turns`` is reached.
Partial credit (call format, search, booking, booking details) keeps the reward dense enough for GRPO.
"""

from __future__ import annotations

import json
import random
import re

import torch
from datasets import Dataset

CITIES = ("paris", "london", "tokyo", "berlin", "rome")

# Four hotels per city; cheaper ones hold fewer guests so budget and party size pull against each other.
CATALOG = [
    {
        "hotel_id": f"{city[:3].upper()}{k + 1}",
        "city": city,
        "price": 60 + 40 * k + 10 * c,
        "max_guests": (1, 2, 3, 4)[k],
    }
    for c, city in enumerate(CITIES)
    for k in range(4)
]

DIFFICULTIES = ("easy", "medium", "hard")

SYSTEM_PROMPT = (
    "You book hotels. Call a tool by writing "
    '<tool_call>{"name": "search_hotels", "arguments": {"city": "paris"}}</tool_call> '
    "and wait for the result. Search first, then book one of the hotels found with "
    '<tool_call>{"name": "book_hotel", "arguments": {"hotel_id": "PAR1", "nights": 2, "guests": 1}}</tool_call>.'
)

_TEMPLATES = (
    "Please book a hotel in {city} for {nights} nights{extra}.",
    "I need a room in {city} for {nights} nights{extra}.",
    "Find and book a hotel in {city}, {nights} nights{extra}.",
    "Book me {nights} nights in {city}{extra}.",
)

_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)

CREDIT_FORMAT = 0.1
CREDIT_SEARCH = 0.2
CREDIT_VALID_HOTEL = 0.4
CREDIT_NIGHTS = 0.15
CREDIT_GUESTS = 0.15


def parse_tool_calls(text: str) -> list[dict]:
    """Return the well-formed ``{"name": str, "arguments": dict}`` calls found in ``text``, in order."""
    calls = []
    for body in _TOOL_CALL.findall(text):
        try:
            call = json.loads(body)
        except json.JSONDecodeError:
            continue
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            continue
        args = call.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                continue
        if isinstance(args, dict):
            calls.append({"name": call["name"], "arguments": args})
    return calls


def _as_int(value) -> int | None:
    """Read a whole number from a tool argument, which models write as 3, 3.0 or "3"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


class HotelEnv:
    """Book a hotel that fits the user's city, nights, party size and budget."""

    def __init__(
        self,
        max_turns: int = 3,
        difficulty: str = "easy",
        num_requests: int = 64,
        seed: int = 0,
        max_new_tokens: int = 32,
    ):
        if difficulty not in DIFFICULTIES:
            raise ValueError(f"difficulty must be one of {DIFFICULTIES}, got {difficulty!r}")
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.num_requests = num_requests
        self.seed = seed
        self.max_new_tokens = max_new_tokens

    def get_tools(self) -> list[dict]:
        return [
            {
                "type": "function",
                "function": {
                    "name": "search_hotels",
                    "description": "List hotels in a city, optionally under a price per night.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "city": {"type": "string", "enum": list(CITIES)},
                            "max_price": {"type": "integer", "description": "Highest price per night."},
                        },
                        "required": ["city"],
                    },
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "book_hotel",
                    "description": "Book a hotel found by search_hotels.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "hotel_id": {"type": "string"},
                            "nights": {"type": "integer"},
                            "guests": {"type": "integer", "description": "Number of guests, 1 if not given."},
                        },
                        "required": ["hotel_id", "nights"],
                    },
                },
            },
        ]

    def search_hotels(self, city, max_price=None) -> list[dict]:
        """The ``search_hotels`` tool itself: hotels in ``city`` costing at most ``max_price``."""
        city = str(city).strip().lower()
        limit = _as_int(max_price)
        return [h for h in CATALOG if h["city"] == city and (limit is None or h["price"] <= limit)]

    def build_dataset(self, tokenizer=None) -> Dataset:
        rng = random.Random(self.seed)
        rows = []
        for i in range(self.num_requests):
            city = rng.choice(CITIES)
            nights = rng.randint(1, 7)
            guests = rng.randint(1, 4) if self.difficulty != "easy" else 1
            max_price = None
            if self.difficulty == "hard":
                roomy = [h for h in CATALOG if h["city"] == city and h["max_guests"] >= guests]
                max_price = rng.choice(roomy)["price"] + rng.choice((0, 5, 20))
            valid = [h["hotel_id"] for h in self.search_hotels(city, max_price) if h["max_guests"] >= guests]
            extra = ""
            if self.difficulty != "easy":
                extra += f" for {guests} guests"
            if max_price is not None:
                extra += f", at most {max_price} per night"
            request = _TEMPLATES[i % len(_TEMPLATES)].format(city=city, nights=nights, extra=extra)
            rows.append(
                {
                    "prompt": self._messages(request),
                    "request": request,
                    "city": city,
                    "nights": nights,
                    "guests": guests,
                    "max_price": max_price,
                    "hotel_ids": valid,
                }
            )
        return Dataset.from_list(rows)

    def score_episode(self, model, tokenizer, completion: str, **row) -> float:
        calls = parse_tool_calls(completion)
        turn_calls = calls
        transcript = [*self._messages(row["request"]), {"role": "assistant", "content": completion}]
        turns = 1
        while (
            turns < self.max_turns
            and not any(c["name"] == "book_hotel" for c in calls)
            and any(c["name"] == "search_hotels" for c in turn_calls)
        ):
            for call in turn_calls:
                if call["name"] == "search_hotels":
                    args = call["arguments"]
                    found = self.search_hotels(args.get("city", ""), args.get("max_price"))
                    transcript.append({"role": "tool", "content": json.dumps(found)})
            reply = self._next_turn(model, tokenizer, transcript)
            transcript.append({"role": "assistant", "content": reply})
            turn_calls = parse_tool_calls(reply)
            calls = calls + turn_calls
            turns += 1
        return self._score(calls, row)

    def _messages(self, request: str) -> list[dict]:
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": request}]

    def _next_turn(self, model, tokenizer, transcript: list[dict]) -> str:
        text = tokenizer.apply_chat_template(
            transcript, tools=self.get_tools(), add_generation_prompt=True, tokenize=False
        )
        # The chat template already placed any special tokens the model expects.
        inputs = tokenizer(text, return_tensors="pt", add_special_tokens=False).to(model.device)
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        with torch.no_grad():
            out = model.generate(
                input_ids=inputs["input_ids"],
                attention_mask=inputs["attention_mask"],
                max_new_tokens=self.max_new_tokens,
                pad_token_id=pad_id,
            )
        return tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)

    def _score(self, calls: list[dict], row: dict) -> float:
        known = [c for c in calls if c["name"] in ("search_hotels", "book_hotel")]
        if not known:
            return 0.0
        score = CREDIT_FORMAT
        city = str(row["city"]).lower()
        if any(
            c["name"] == "search_hotels" and str(c["arguments"].get("city", "")).strip().lower() == city for c in known
        ):
            score += CREDIT_SEARCH
        booking = next((c["arguments"] for c in known if c["name"] == "book_hotel"), None)
        if booking is not None:
            valid = row["hotel_ids"]
            if isinstance(valid, str):
                valid = json.loads(valid)
            if str(booking.get("hotel_id", "")).strip().upper() in valid:
                score += CREDIT_VALID_HOTEL
            if _as_int(booking.get("nights")) == int(row["nights"]):
                score += CREDIT_NIGHTS
            if _as_int(booking.get("guests", 1)) == int(row["guests"]):
                score += CREDIT_GUESTS
        return min(1.0, max(0.0, round(score, 6)))
