"""The one backoff: waits grow by their factor up to the cap, and start again after a success."""

from __future__ import annotations

import pytest

from trainer_core.contract.run.backoff import Backoff


def test_waits_grow_to_the_cap_and_start_again_after_a_reset():
    backoff = Backoff(0.5, cap=30.0)
    assert [backoff.next() for _ in range(8)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    backoff.reset()
    assert backoff.next() == 0.5


def test_the_alerts_schedule_is_one_then_three_seconds():
    backoff = Backoff(1.0, factor=3.0, cap=3.0)
    assert [backoff.next() for _ in range(3)] == [1.0, 3.0, 3.0]


@pytest.mark.parametrize(("start", "factor", "cap"), [(0, 2, 1), (2, 2, 1), (1, 0.5, 3)])
def test_a_schedule_that_cannot_grow_is_refused(start, factor, cap):
    with pytest.raises(ValueError, match="Backoff needs"):
        Backoff(start, factor, cap)
