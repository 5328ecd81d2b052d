"""The health rules' window of recent steps: ``recent`` and ``before_last`` read the same steps as slicing a list
of the window would, at every fill level and for a metric that starts late or skips steps (they read each
metric's column instead of walking the steps), and
``all_numbers``, which checks a window's values inline, agrees with ``is_number``."""

from __future__ import annotations

import math
import random

import pytest

from trainer_core.contract.health.core import Window
from trainer_core.contract.run.json_values import all_numbers, is_number


def test_recent_and_before_last_read_the_slices_they_name():
    window = Window(size=6, baseline_steps=2)
    values = [1.0, None, 3.0, float("nan"), 5.0, 6.0, 7.0, "x", 9.0]
    for step, value in enumerate(values, 1):
        window.append(step, {"v": value} if value is not None else {})
        held = [m.get("v") for _, m in list(window.steps)]
        for n in range(0, 8):
            expected = held[-n:] if n and len(held) >= n else []
            assert window.recent("v", n) == expected, (step, n)
            before = [v for v in held[-n - 1 : -1] if isinstance(v, float) and v == v]
            assert window.before_last("v", n) == before, (step, n)
    assert window.baseline("v") == 2.0  # the first two finite values: 1.0 and 3.0


def test_each_metrics_column_keeps_step_with_the_window_when_metrics_come_late_or_skip_steps():
    rng = random.Random(7)
    window = Window(size=7, baseline_steps=3)
    kinds = [1.5, -2.0, 0, float("nan"), None, "x", True]
    for step in range(1, 41):
        metrics = {}
        for key, starts in (("a", 1), ("b", 4), ("c", 12), ("d", 30)):
            if step >= starts and rng.random() < 0.7:
                metrics[key] = rng.choice(kinds) if rng.random() < 0.3 else rng.uniform(-1, 1)
        window.append(step, metrics)
        held = list(window.steps)
        for key in ("a", "b", "c", "d", "never"):
            column = [m.get(key) for _, m in held]
            for n in range(0, 9):
                expected = column[-n:] if n and len(column) >= n else []
                assert _same(window.recent(key, n), expected), (step, key, n)
                assert window.before_last(key, n) == [
                    v for v in column[-n - 1 : -1] if type(v) in (int, float) and math.isfinite(v)
                ], (step, key, n)
    assert window.seen == {"a", "b", "c", "d"}


def _same(got: list, expected: list) -> bool:
    """Equal, NaN in the same places counting as equal."""
    return len(got) == len(expected) and all(
        g is e or g == e or (isinstance(g, float) and isinstance(e, float) and math.isnan(g) and math.isnan(e))
        for g, e in zip(got, expected)
    )


def test_all_numbers_says_what_is_number_says_of_each_value():
    np = pytest.importorskip("numpy")
    zoo = [1.0, 0, -3, 2**80, float("nan"), float("inf"), -float("inf"), True, None, "1", np.float64(2.0), np.nan]
    for value in zoo:
        for other in (1.5, value):
            assert all_numbers([other, value]) is (is_number(other) and is_number(value)), value
    assert all_numbers([]) and all_numbers(iter([1.0, 2]))
