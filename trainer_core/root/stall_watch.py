"""The run's root judges a stall itself, so a hung run is noticed with nobody watching.

A trainer stuck in a reward function, a tool, generation or a collective writes nothing, and a viewer sees
the stall only while one is open. The root of machine 0 follows events.jsonl as the trainer writes it (by
byte offset, from where this leg began) and, while the trainer's process is alive, judges the contract's
``stall`` rule (``health/stall.py``) with the run's ``--health`` thresholds. A stall is written as a
``warning`` event, once at ``warn`` and once more if it turns ``critical``, in the same file the trainer
appends to (under its lock), so the run's alerts (``notify.py``), the runs list and every monitor see it.

With ``--stop-on stall`` the root stops the run itself: it records ``stop_requested`` (``auto-stop: stall at
step N``) and writes the stop file, which a trainer that was only slow honours at its next step's end with
a checkpoint; one still without a step after the stall's limit again gets two SIGTERMs (forced: recorded as
stopped, no checkpoint), since a hung step never ends.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

from trainer_core.contract.config.checks import stop_on_rules
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.health.core import Thresholds
from trainer_core.contract.health.stall import stall_warning
from trainer_core.contract.run.event_log import EventTail, EventWriter
from trainer_core.contract.run.events import HealthWarning, Metrics, StopRequested
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

POLL_S = 2.0
HISTORY = 50  # step times kept: the median of the last 20 intervals is what the rule reads


class StallWatch:
    """Follows ``folder``'s events from ``start_offset`` while ``worker`` lives (see the module)."""

    def __init__(
        self,
        folder: RunFolder,
        config: RunConfig,
        worker: subprocess.Popen,
        start_offset: int = 0,
        poll_s: float = POLL_S,
    ):
        self.folder, self.worker, self.poll_s = folder, worker, poll_s
        try:
            self.thresholds = Thresholds.from_mapping(config.health)
        except (TypeError, ValueError):
            self.thresholds = Thresholds()
        self.stops = HealthRule.STALL.value in stop_on_rules(config)
        self.tail = EventTail(folder.events_file, start_offset)
        self.times: list[float] = []
        self.step = 0
        self.written: set[tuple[int, Severity]] = set()
        self.stop_asked: float | None = None  # when the root asked a stalled trainer to stop (monotonic)
        self.forced = False
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="stall watch", daemon=True)

    def start(self) -> StallWatch:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._thread.is_alive():
            self._thread.join(timeout=max(self.poll_s * 2, 2.0))

    def _follow(self) -> None:
        while not self._closing.wait(self.poll_s):
            try:
                self.check(time.time())
            except Exception as exc:  # the root's watch must never end the run
                print(f"stall watch: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    def check(self, now: float) -> HealthWarning | None:
        """Read what the trainer wrote since the last check; write a stall warning that is due (returned)."""
        for event in self.tail.poll():
            if isinstance(event, Metrics) and isinstance(event.time, (int, float)):
                if event.step != self.step:
                    self.stop_asked = None  # a step landed: the run moves again
                self.step = event.step
                self.times = [*self.times[-HISTORY:], float(event.time)]
        alive = self.worker.poll() is None
        found = stall_warning(self.times, self.step, now, alive, self.thresholds)
        if found is None:
            return None
        if (self.step, found.severity) not in self.written:
            self.written.add((self.step, found.severity))
            self._emit(found)
        if self.stops and found.severity.alarming:
            self._stop(found)
        return found

    def _emit(self, event) -> None:
        with EventWriter(self.folder.events_file) as writer:
            writer.emit(event)

    def _stop(self, found: HealthWarning) -> None:
        if self.stop_asked is None:
            reason = f"auto-stop: {HealthRule.STALL.value} at step {self.step}"
            self._emit(StopRequested(reason=reason, step=self.step))
            self.folder.request_stop(reason)
            self.stop_asked = time.monotonic()
            print(f"stall watch: {found.message} Stopping the run (--stop-on stall).", file=sys.stderr, flush=True)
            return
        limit = float(found.evidence.get("limit_seconds") or self.thresholds.stall_min_seconds)
        if not self.forced and time.monotonic() - self.stop_asked > limit and self.worker.poll() is None:
            self.forced = True  # a hung step never reaches the stop file: a second signal means now
            print("stall watch: no step since the stop request; forcing the trainer to stop", file=sys.stderr)
            for _ in range(2):
                self.worker.send_signal(signal.SIGTERM)
                time.sleep(0.5)
