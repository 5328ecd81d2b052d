"""The pattern task with a held-out set and a task metric the reward does not measure, for the evaluation tests.

The reward (the share of the letter 'a') can be gamed: a row of a's earns it all. The task metric,
``answer_is_sentence``, asks what the pre-trained tiny model does at first: answer with a plain sentence of
words. As GRPO teaches the model to write a's, the reward rises and the held-out metric falls: the case the
divergence rule and the checkpoint ledger exist for.
"""

from __future__ import annotations

import sys
from pathlib import Path

from datasets import Dataset

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from pattern_env import PatternEnv, pattern_prompts


def is_sentence(text: str) -> float:
    """1.0 for a plain sentence: at least three words of letters, most of them not a run of one letter."""
    words = [w.strip(".,!?;:") for w in text.split()]
    words = [w for w in words if w]
    if len(words) < 3:
        return 0.0
    plain = [w for w in words if w.isalpha() and len(set(w.lower())) > 1]
    return 1.0 if len(plain) / len(words) >= 0.6 else 0.0


class HeldOutPatternEnv(PatternEnv):
    """PatternEnv with held-out prompts (the later templates' phrasings, never trained on) and a task metric."""

    def __init__(self, target: str = "a", num_prompts: int = 32, eval_prompts: int = 8, broken_metric: str = ""):
        super().__init__(target, num_prompts)
        self.eval_prompts = eval_prompts
        self.broken_metric = broken_metric

    def build_eval_dataset(self, tokenizer=None) -> Dataset:
        prompts = [p.replace(":", " please:") for p in pattern_prompts(self.target, self.eval_prompts)]
        return Dataset.from_dict({"prompt": prompts, "target": [self.target] * len(prompts)})

    def eval_metrics(self, completion: str, target: str | None = None, **row) -> dict:
        if self.broken_metric == "text":
            return {"answer_is_sentence": "yes"}
        return {"answer_is_sentence": is_sentence(completion)}


def answer_is_sentence(completions, **kwargs) -> list[float]:
    """The same task metric for a dataset run (--eval-metric FILE.py:answer_is_sentence)."""
    return [is_sentence(c if isinstance(c, str) else "".join(m.get("content") or "" for m in c)) for c in completions]


def not_a_number(completions, **kwargs) -> list:
    """A broken --eval-metric: it returns text."""
    return ["high" for _ in completions]
