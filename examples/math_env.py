"""Arithmetic questions scored by correctness plus a weighted format reward.

Shows the common recipe of composing rewards: ``score_episode`` pays only for the right answer, and
``format_reward`` (weight 0.5) pays for the ``<reasoning>...</reasoning><answer>N</answer>`` layout, so a
model that cannot yet add still gets a signal for writing its answer where it can be read.
"""

from __future__ import annotations

import operator
import random
import re

from datasets import Dataset

SYSTEM_PROMPT = (
    "Answer the question. Think inside <reasoning>...</reasoning>, then give only the number inside "
    "<answer>...</answer>, for example <reasoning>2 plus 3 is 5</reasoning><answer>5</answer>."
)

_OPERATIONS = (("+", operator.add), ("-", operator.sub), ("*", operator.mul))
_QUESTIONS = ("What is {a} {op} {b}?", "Compute {a} {op} {b}.", "{a} {op} {b} = ?")

_STRICT = re.compile(r"\s*<reasoning>.*?</reasoning>\s*<answer>.*?</answer>\s*", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def completion_text(completion) -> str:
    """The text of a TRL completion: a string, or a list of chat messages for chat prompts."""
    if isinstance(completion, str):
        return completion
    return "".join(str(m.get("content") or "") for m in completion if isinstance(m, dict))


def format_reward(prompts, completions, **kwargs) -> list[float]:
    """1.0 for the strict reasoning-then-answer layout, 0.5 for an answer tag anywhere, else 0.0."""
    rewards = []
    for completion in completions:
        text = completion_text(completion)
        if _STRICT.fullmatch(text):
            rewards.append(1.0)
        elif _ANSWER.search(text):
            rewards.append(0.5)
        else:
            rewards.append(0.0)
    return rewards


class MathEnv:
    """Small addition, subtraction and multiplication problems with a known answer."""

    def __init__(self, num_problems: int = 64, max_operand: int = 20, seed: int = 0):
        self.num_problems = num_problems
        self.max_operand = max_operand
        self.seed = seed

    def build_dataset(self, tokenizer=None) -> Dataset:
        rng = random.Random(self.seed)
        rows = []
        for i in range(self.num_problems):
            a, b = rng.randint(0, self.max_operand), rng.randint(0, self.max_operand)
            symbol, fn = rng.choice(_OPERATIONS)
            question = _QUESTIONS[i % len(_QUESTIONS)].format(a=a, op=symbol, b=b)
            rows.append(
                {
                    "prompt": [
                        {"role": "system", "content": SYSTEM_PROMPT},
                        {"role": "user", "content": question},
                    ],
                    "answer": str(fn(a, b)),
                }
            )
        return Dataset.from_list(rows)

    def score_episode(self, model, tokenizer, completion: str, answer: str = "", **row) -> float:
        found = _ANSWER.search(completion_text(completion))
        return 1.0 if found and found.group(1).strip() == str(answer).strip() else 0.0

    def get_reward_functions(self) -> list:
        return [(format_reward, 0.5)]
