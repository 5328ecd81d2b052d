"""Reward functions in TRL's interface for examples/recipes/open_r1_current.yaml, in place of open-r1's
``format`` and ``tag_count`` (open-r1's own registry, which grpo-tui does not ship): the same idea, written
for the example. Each gets the completions (text, or a one-message list for chat prompts) and returns one
float per completion.
"""

import re

_LAYOUT = re.compile(r"^<think>\n.*?\n</think>\n<answer>\n.*?\n</answer>$", re.DOTALL)
_TAGS = ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>")


def _text(completion) -> str:
    return completion if isinstance(completion, str) else "".join(m.get("content") or "" for m in completion)


def format_reward(completions, **kwargs) -> list[float]:
    """1.0 for the whole answer laid out as <think>...</think> then <answer>...</answer>, else 0.0."""
    return [1.0 if _LAYOUT.match(_text(c).strip()) else 0.0 for c in completions]


def tag_count_reward(completions, **kwargs) -> list[float]:
    """A quarter for each of the four tags present exactly once: partial credit on the way to the layout."""
    return [sum(0.25 for tag in _TAGS if _text(c).count(tag) == 1) for c in completions]
