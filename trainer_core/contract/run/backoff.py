"""Waits that grow between attempts: the one backoff of everything that retries over a network.

A run's alerts are posted again after a failed attempt, and a host's event stream reconnects after it drops;
both wait a little longer each time, up to a cap, and start again from the shortest wait once an attempt gets
through. It sits in the base domain so the trainer and the app share it. Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Backoff:
    """``next()`` gives ``start``, then each wait ``factor`` times the last, never above ``cap``; ``reset()``
    after a success. ``Backoff(1, 3, 3)`` waits 1 s, then 3 s each time after."""

    start: float
    factor: float = 2.0
    cap: float = 30.0
    _wait: float | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.start <= self.cap or self.factor < 1:
            raise ValueError(
                f"Backoff needs 0 < start <= cap and factor >= 1, got {self.start}, {self.factor}, {self.cap}"
            )

    def next(self) -> float:
        self._wait = self.start if self._wait is None else min(self._wait * self.factor, self.cap)
        return self._wait

    def reset(self) -> None:
        self._wait = None
