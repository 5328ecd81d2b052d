"""Reward functions in TRL's interface for examples/recipes/cpu_demo.yaml.

Each gets the completions (text, or a one-message list for chat prompts) and every dataset column by name,
and returns one float per completion, as TRL's GRPOTrainer expects.
"""


def _text(completion) -> str:
    return completion if isinstance(completion, str) else "".join(m.get("content") or "" for m in completion)


def target_share(completions, target, **kwargs) -> list[float]:
    """Share of the visible characters that are the row's target letter: partial credit for every completion."""
    scores = []
    for completion, letter in zip(completions, target):
        visible = "".join(_text(completion).split())
        scores.append(visible.count(letter) / len(visible) if visible else 0.0)
    return scores
