"""The health rules' window of recent steps: ``recent`` and ``before_last`` read the same steps as slicing a list
of the window would, at every fill level (they walk the deque's end instead of copying it every step), and
``all_numbers``, which checks a window's values inline, agrees with ``is_number``."""

from __future__ import annotations

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


def test_all_numbers_says_what_is_number_says_of_each_value():
    np = pytest.importorskip("numpy")
    zoo = [1.0, 0, -3, 2**80, float("nan"), float("inf"), -float("inf"), True, None, "1", np.float64(2.0), np.nan]
    for value in zoo:
        for other in (1.5, value):
            assert all_numbers([other, value]) is (is_number(other) and is_number(value)), value
    assert all_numbers([]) and all_numbers(iter([1.0, 2]))
