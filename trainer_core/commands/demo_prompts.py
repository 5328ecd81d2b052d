"""The demos' prompts, written once: the tiny model is pre-trained on them and the demo environments ask them.

The demo works because the model it trains has seen these instructions before (it sometimes obeys, so GRPO has
something to reinforce). The pattern demo's environment (``grpo_tui/resources/demo/pattern_env.py``) and the
agentic demo's (``hotel_agent_env.py`` beside it) import them from here, so the two cannot drift apart. Plain
data: importing it loads nothing heavy.
"""

from __future__ import annotations

INSTRUCTIONS = (
    "Write the letter {t} many times:",
    "Repeat {t} again and again:",
    "Type {t} over and over:",
    "Say {t} {t} {t} and keep going:",
    "Fill the line with {t}:",
    "Only write {t}, nothing else:",
    "Print {t} {n} times:",
    "Give me a row of {t}:",
)
"""The pattern demo's instructions, ``{t}`` the letter to write and ``{n}`` a count."""

# room types whose names the agent model's tokenizer holds as single tokens, so copying one is one step
ROOMS = ("cheap", "large", "city")
PRICES: dict[str, int] = {"cheap": 60, "large": 110, "city": 150}
REQUESTS = (
    "Book a {room} room for {nights} nights.",
    "I need a {room} room for {nights} nights.",
    "Please book me a {room} room for {nights} nights.",
    "Can you get me a {room} room, {nights} nights?",
)
"""The hotel agent's requests, ``{room}`` one of ROOMS and ``{nights}`` a count."""
