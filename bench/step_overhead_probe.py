"""The trainer of bench.step_overhead: ``python -m trainer_core worker RUN_DIR`` with grpo-tui's own per-step code
timed from inside, printing one ``RESULT {json}`` line at exit.

Timed, in seconds summed over the run: the event callback's ``on_log`` (the metrics event, the health rules, the
sample statistics, the echo line) and ``on_step_end`` (stops), the health rules' ``feed`` and the statistics'
``pop`` inside ``on_log``, and the sample recorder the reward function calls (the statistics' ``add`` and the kept
samples' write). The wrappers add a ``perf_counter`` pair per call and change nothing else.

    python -m bench.step_overhead_probe RUN_DIR
"""

from __future__ import annotations

import atexit
import runpy
import sys
import time

from bench.common import report

TOTALS: dict[str, float] = {}
CALLS: dict[str, int] = {}


def timed(name: str, fn):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TOTALS[name] = TOTALS.get(name, 0.0) + time.perf_counter() - start
            CALLS[name] = CALLS.get(name, 0) + 1

    return wrapper


def instrument() -> None:
    from trainer_core.contract.health.monitor import HealthMonitor
    from trainer_core.contract.health.sample_stats import SampleStats
    from trainer_core.training import trl_setup
    from trainer_core.training.callbacks import EventStreamCallback

    EventStreamCallback.on_log = timed("on_log", EventStreamCallback.on_log)
    EventStreamCallback.on_step_end = timed("on_step_end", EventStreamCallback.on_step_end)
    HealthMonitor.feed = timed("health", HealthMonitor.feed)
    SampleStats.pop = timed("stats_pop", SampleStats.pop)
    make_recorder = trl_setup._sample_recorder
    trl_setup._sample_recorder = lambda *a, **k: timed("recorder", make_recorder(*a, **k))


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python -m bench.step_overhead_probe RUN_DIR")
    instrument()
    atexit.register(lambda: report({"seconds": {k: round(v, 6) for k, v in TOTALS.items()}, "calls": CALLS}))
    sys.argv = ["trainer_core", "worker", sys.argv[1]]
    runpy.run_module("trainer_core", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
