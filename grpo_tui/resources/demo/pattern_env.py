"""A task a tiny model learns within a few GRPO steps: write the letter it is asked for.

The reward is the share of the completion's visible characters that are the target letter, so every
completion earns some partial credit and a group of samples almost always differs in reward. That
non-zero reward spread is what lets the demo and the tests watch a model actually improve on a CPU.

The demo's model (``grpo-tui tiny-model``, pre-trained on these instructions) mostly answers them with a
sentence of common words (a reward near 0.1, from the a's in its words) and only sometimes with a row of
a's (1.0); GRPO turns the exception into the rule. A random model starts from byte soup and climbs slowly.

Held-out prompts (``build_eval_dataset``) ask for counts the training prompts never do; their task metric
``wrote_target`` (``eval_metrics``) is whether the completion is mostly the target letter, a yes/no that does
not depend on the reward's partial credit.
"""

from __future__ import annotations

from datasets import Dataset

from trainer_core.commands.demo_prompts import INSTRUCTIONS

_TEMPLATES = INSTRUCTIONS  # the tiny demo model is pre-trained on the same instructions


def pattern_prompts(target: str, num_prompts: int) -> list[str]:
    return [_TEMPLATES[i % len(_TEMPLATES)].format(t=target, n=3 + i % 7) for i in range(num_prompts)]


def held_out_prompts(target: str, num_prompts: int) -> list[str]:
    """Instructions the training prompts never give: counts from 10 up (they ask for 3 to 9)."""
    counted = ("Print {t} {n} times:", "Say {t} {t} {t} and keep going, {n} times:")
    return [counted[i % len(counted)].format(t=target, n=10 + i) for i in range(num_prompts)]


def target_fraction(completion: str, target: str) -> float:
    """Share of non-whitespace characters that belong to occurrences of ``target``."""
    visible = "".join(completion.split())
    if not visible or not target:
        return 0.0
    return min(1.0, visible.count(target) * len(target) / len(visible))


class PatternEnv:
    """Reward completions made of the target letter."""

    def __init__(self, target: str = "a", num_prompts: int = 64, num_eval_prompts: int = 0):
        if not target or target != target.strip():
            raise ValueError("target must be a non-empty string without surrounding whitespace")
        self.target = target
        self.num_prompts = num_prompts
        self.num_eval_prompts = num_eval_prompts

    def build_dataset(self, tokenizer=None) -> Dataset:
        prompts = pattern_prompts(self.target, self.num_prompts)
        return Dataset.from_dict({"prompt": prompts, "target": [self.target] * len(prompts)})

    def build_eval_dataset(self, tokenizer=None) -> Dataset | None:
        """``num_eval_prompts`` held-out prompts; none (no held-out set) unless the config asks for some."""
        if not self.num_eval_prompts:
            return None
        prompts = held_out_prompts(self.target, self.num_eval_prompts)
        return Dataset.from_dict({"prompt": prompts, "target": [self.target] * len(prompts)})

    def eval_metrics(self, completion: str, target: str | None = None, **row) -> dict[str, float]:
        """``wrote_target``: at least half of the completion's visible characters are the target."""
        return {"wrote_target": float(target_fraction(completion, target or self.target) >= 0.5)}

    def score_episode(self, model, tokenizer, completion: str, target: str | None = None, **row) -> float:
        return target_fraction(completion, target or self.target)
