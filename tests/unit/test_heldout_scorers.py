"""The held-out scorers compute each batch's table of metrics once and hand each metric its column. A batch is
known by identity: a later batch of another size whose list happens to get the freed list's ``id`` (CPython
reuses freed memory all the time) must be scored afresh, never given the old batch's values."""

from __future__ import annotations

import gc

from tests.envs.heldout_env import HeldOutPatternEnv
from trainer_core.evaluation.heldout import env_scorers, reward_scorers


def letters(completions, **kwargs) -> list[float]:
    return [min(1.0, len(c) / 10) for c in completions]


def test_each_new_batch_is_scored_even_when_it_reuses_a_freed_batchs_id():
    reward = reward_scorers([letters], None)["reward"]
    sentence = env_scorers(HeldOutPatternEnv(), ["answer_is_sentence"])["answer_is_sentence"]
    for size in [3, 8, 2, 5] * 25:
        batch = ["the cat sat" if i % 2 else "a" * i for i in range(size)]
        rows = [{"prompt": "p", "target": "a"}] * size
        assert reward(["p"] * size, batch, rows) == letters(batch)
        assert sentence(["p"] * size, batch, rows) == [1.0 if i % 2 else 0.0 for i in range(size)]
        del batch
        gc.collect()


def test_the_metrics_of_one_batch_are_computed_once():
    calls = []

    def counted(completions, **kwargs):
        calls.append(len(completions))
        return [0.5] * len(completions)

    counted.__name__ = "counted"
    scorers = reward_scorers([letters, counted], None)
    batch = ["aaaa", "bb"]
    rows = [{"prompt": "p"}] * 2
    assert scorers["counted"](["p"] * 2, batch, rows) == [0.5, 0.5]
    assert scorers["reward"](["p"] * 2, batch, rows) == [0.9, 0.7]
    assert calls == [2]
