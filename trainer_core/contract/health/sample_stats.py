"""Statistics of a batch of scored completions that TRL does not log: repetition, near-copies within a
group, and how completion length and reward move together.

The trainer computes them from every completion its reward functions score (not only the few kept in
samples.jsonl) and logs them beside TRL's metrics under ``samples/``, where the health rules for degenerate
output and length exploitation read them. Stdlib only: a watcher can recompute them from samples.jsonl.

Repetition is measured on words (whitespace-separated): the share of a completion's word pairs that repeat
an earlier pair. "the the the the" scores 2/3, a sentence about 0. A completion of fewer than three words
but at least ``LONG_WORD`` characters (a row of one character, "aaaaaaaa…") is measured on its character
4-grams instead; shorter ones are not measured.

Episodes of an agentic run (samples with ``turns``) also give the mean number of turns the model wrote
(``samples/turns_mean``), the share of episodes that stopped at the turn limit with tool calls never run
(``samples/turn_limit_share``), and the share that called a tool without an error and scored at least
``SUCCESS_SCORE``: tool use that succeeds (``samples/tool_success``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from math import fsum, sqrt
from statistics import fmean

from trainer_core.contract.run.json_values import is_number

REPETITION = "samples/repetition"
NEAR_DUPLICATES = "samples/near_duplicates"
LENGTH_REWARD_CORR = "samples/length_reward_corr"
TURNS_MEAN = "samples/turns_mean"
TURN_LIMIT_SHARE = "samples/turn_limit_share"
TOOL_SUCCESS = "samples/tool_success"
SUCCESS_SCORE = 0.5  # an episode that scores this much (of the [0, 1] an environment gives) succeeded
KEYS = (REPETITION, NEAR_DUPLICATES, LENGTH_REWARD_CORR, TURNS_MEAN, TURN_LIMIT_SHARE, TOOL_SUCCESS)
LONG_WORD = 16
NEAR_COPY = 0.9  # word-set overlap (Jaccard) at which two completions count as near-identical


def repetition(text: str) -> float | None:
    """The share of ``text``'s word pairs (or, for a long run without spaces, character 4-grams) that repeat."""
    return _repetition(text.split())


def _repetition(words: list[str]) -> float | None:
    """The share of repeats among ``words``' pairs, or among the 4-grams of a long run without spaces (each 4-gram
    a tuple of its characters, built in C: the tiny model's completions are mostly such runs)."""
    if len(words) >= 3:
        return 1.0 - len(set(pairwise(words))) / (len(words) - 1)
    joined = "".join(words)
    if len(joined) >= LONG_WORD:
        return 1.0 - len(set(zip(joined, joined[1:], joined[2:], joined[3:]))) / (len(joined) - 3)
    return None


def _near_copy(a: str, b: str, wa: set[str], wb: set[str]) -> bool:
    if a == b:
        return True
    if not wa or not wb:
        return False
    return len(wa & wb) / len(wa | wb) >= NEAR_COPY and abs(len(a) - len(b)) <= 0.1 * max(len(a), len(b))


def near_duplicates(group: Sequence[str], words: Sequence[list[str]] | None = None) -> float:
    """The share of a group's completions that nearly copy an earlier one of the same group (``words``: each
    one's ``split()``, where the caller has it)."""
    if len(group) < 2:
        return 0.0
    sets = [set(w) for w in (words if words is not None else (text.split() for text in group))]
    copies = sum(
        1 for i, text in enumerate(group) if any(_near_copy(text, group[j], sets[i], sets[j]) for j in range(i))
    )
    return copies / (len(group) - 1)


def correlation(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's correlation, or None when either side does not vary. In floats (``statistics``' exact
    fractions cost more than the rest of a step's statistics, every step)."""
    if len(xs) < 3 or len(xs) != len(ys) or min(xs) == max(xs) or min(ys) == max(ys):
        return None
    mx, my = fmean(xs), fmean(ys)
    dx, dy = [x - mx for x in xs], [y - my for y in ys]
    spread = sqrt(fsum(d * d for d in dx) * fsum(d * d for d in dy))
    if spread == 0:
        return None
    return max(-1.0, min(1.0, fsum(a * b for a, b in zip(dx, dy)) / spread))


@dataclass
class SampleStats:
    """Collects scored batches between two logged steps; ``pop`` gives their statistics and starts again."""

    _repetition: list[float] = field(default_factory=list)
    _duplicates: list[float] = field(default_factory=list)
    _lengths: list[float] = field(default_factory=list)
    _rewards: list[float] = field(default_factory=list)
    _turns: list[float] = field(default_factory=list)
    _at_limit: list[float] = field(default_factory=list)
    _tool_success: list[float] = field(default_factory=list)

    def _episode(self, sample: dict) -> None:
        turns = [t for t in sample["turns"] if isinstance(t, dict)]
        self._turns.append(float(sum(1 for t in turns if t.get("role") == "assistant" and not t.get("tool")) or 1))
        self._at_limit.append(1.0 if sample.get("turn_limit") else 0.0)
        called = any(t.get("tool") and not t.get("error") for t in turns)
        reward = sample.get("reward")
        earned = is_number(reward) and reward >= SUCCESS_SCORE
        self._tool_success.append(1.0 if called and earned else 0.0)

    def add(self, samples: Sequence[dict]) -> None:
        """A scored batch: dicts with ``prompt``, ``completion`` and ``reward``, a group's completions adjacent.
        Each completion is split into words once, for its repetition, its length and its group's near-copies."""
        group: list[str] = []
        words_of: list[list[str]] = []
        prompt = object()
        for sample in samples:
            text = str(sample.get("completion") or "")
            words = text.split()
            if isinstance(sample.get("turns"), list):
                self._episode(sample)
            measured = _repetition(words)
            if measured is not None:
                self._repetition.append(measured)
            reward = sample.get("reward")
            if is_number(reward):
                self._lengths.append(float(len(words)))
                self._rewards.append(float(reward))
            if sample.get("prompt") != prompt:
                if len(group) > 1:
                    self._duplicates.append(near_duplicates(group, words_of))
                group, words_of = [], []
            prompt = sample.get("prompt")
            group.append(text)
            words_of.append(words)
        if len(group) > 1:
            self._duplicates.append(near_duplicates(group, words_of))

    def pop(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self._repetition:
            out[REPETITION] = fmean(self._repetition)
        if self._duplicates:
            out[NEAR_DUPLICATES] = fmean(self._duplicates)
        corr = correlation(self._lengths, self._rewards)
        if corr is not None:
            out[LENGTH_REWARD_CORR] = corr
        for key, values in (
            (TURNS_MEAN, self._turns),
            (TURN_LIMIT_SHARE, self._at_limit),
            (TOOL_SUCCESS, self._tool_success),
        ):
            if values:
                out[key] = fmean(values)
        self._repetition, self._duplicates, self._lengths, self._rewards = [], [], [], []
        self._turns, self._at_limit, self._tool_success = [], [], []
        return out
