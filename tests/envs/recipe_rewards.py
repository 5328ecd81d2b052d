"""Reward functions in TRL's interface (completions and dataset columns in, one float per completion out),
offline, for the recipe tests: a dense one a tiny model can move, an exact-match accuracy, and a broken one."""


def _text(completion) -> str:
    return completion if isinstance(completion, str) else "".join(m.get("content") or "" for m in completion)


def letter_share(completions, **kwargs) -> list[float]:
    """Share of the completion's visible characters that are the letter 'a' (partial credit everywhere)."""
    out = []
    for completion in completions:
        visible = "".join(_text(completion).split())
        out.append(visible.count("a") / len(visible) if visible else 0.0)
    return out


def exact_solution(completions, solution, **kwargs) -> list[float]:
    """1.0 when the solution (without $ signs) appears in the completion."""
    return [1.0 if str(s).strip("$") in _text(c) else 0.0 for c, s in zip(completions, solution)]


def broken(completions, **kwargs) -> list[float]:
    raise ValueError("broken on purpose")
