"""The app benchmark's measurements, each in a fresh process: ``python -m bench.app_probes KIND ARGS``.

A fresh process per measurement gives each its own memory (peak RSS means something) and its own imports. Each
prints one RESULT line (bench.common.report). Inside the app process, RunStream.poll, MetricChart.redraw and
MetricChart.render_line are wrapped to timestamp when the reward series was read, handed to the chart and
painted; nothing in the app changes.
"""

from __future__ import annotations

import asyncio
import random
import resource
import sys
import time
from pathlib import Path

from bench.app_runs import RATE, go, metric_values, start_writer
from bench.common import SIZE, report, stop_process
from trainer_core.contract.run.event_log import read_events
from trainer_core.contract.run.events import Metrics
from trainer_core.contract.run.folder import RunFolder


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def children_usage() -> dict:
    """CPU seconds and the largest peak RSS of this process's finished children (the backlog reader)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"children_cpu": usage.ru_utime + usage.ru_stime, "children_peak_rss_mb": usage.ru_maxrss / 1024}


def stream(path: str, profile: str = "0", fast: str = "1") -> None:
    """RunStream.poll() alone on a finished run; ``fast`` 0: every line the reference way (orjson, then decode)."""
    from grpo_tui.services.stream.folded import RunStream

    run = RunStream(RunFolder(Path(path)), fast=fast == "1")
    t, cpu = time.perf_counter(), time.process_time()
    run.poll()
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    if profile == "1":
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(RunStream(RunFolder(Path(path)), fast=fast == "1").poll)
        print(f"cProfile of RunStream.poll() on {path}:", file=sys.stderr)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(10)
    report({"seconds": seconds, "cpu": cpu, "points": len(run.series["reward"]), "peak_rss_mb": peak_rss_mb()})


class Marks:
    """Wall-clock marks from inside the app: when the worker read, the charts took, the chart painted.

    Each entry is (time, points, last step) for the reward series at that moment.
    """

    def __init__(self):
        self.reads: list[tuple[float, int, int]] = []
        self.plotted: list[tuple[float, int, int]] = []
        self.painted: list[tuple[float, int, int]] = []

    def install(self) -> None:
        from grpo_tui.services.stream.folded import RunStream
        from grpo_tui.widgets.metric_chart import MetricChart

        marks = self
        poll, redraw, render_line = RunStream.poll, MetricChart.redraw, MetricChart.render_line

        def reward_point(series) -> tuple[int, int]:
            return (len(series), series.steps[-1]) if series is not None and len(series) else (0, 0)

        def snapshot_point(series) -> tuple[int, int]:
            return (series.count, series.end_step) if series is not None and series.count else (0, 0)

        def timed_poll(stream):
            update = poll(stream)
            marks.reads.append((time.time(), *reward_point(stream.series.get("reward"))))
            return update

        def timed_redraw(chart):
            redraw(chart)
            if chart.key == "reward":
                chart._bench_shown = snapshot_point(chart._series)
                marks.plotted.append((time.time(), *chart._bench_shown))

        def timed_render_line(chart, y):
            # the chart repaints only the lines that changed: its first line painted after a redraw marks it
            strip = render_line(chart, y)
            shown = getattr(chart, "_bench_shown", None)
            if chart.key == "reward" and shown and shown != getattr(chart, "_bench_painted", None):
                chart._bench_painted = shown
                marks.painted.append((time.time(), *shown))
            return strip

        RunStream.poll, MetricChart.redraw, MetricChart.render_line = timed_poll, timed_redraw, timed_render_line

    @staticmethod
    def first(entries, points: int = 0, step: int = 0) -> float | None:
        return next((t for t, n, last in entries if n >= points and last >= step), None)


def _since(t0: float, t: float | None) -> float | None:
    return None if t is None else t - t0


def app_load(runs_dir: str, path: str, points: str, timeout: str = "600") -> None:
    """Open the monitor on a finished run and wait until the reward chart has painted every point."""
    import psutil

    from grpo_tui.app import make_app

    marks = Marks()
    marks.install()
    points_wanted = int(points)

    async def main() -> dict:
        t0 = time.time()
        app = make_app(Path(runs_dir), start="watch", watch=Path(path))
        async with app.run_test(size=SIZE) as pilot:
            ready = time.time()
            deadline = t0 + float(timeout)
            while Marks.first(marks.painted, points_wanted) is None and time.time() < deadline:
                await pilot.pause(0.05)
            rss = psutil.Process().memory_info().rss / 2**20
            series = app.screen.charts.get("reward")  # the snapshot the reward chart last drew
            return {
                "points": len(series) if series is not None else 0,
                "app_ready": ready - t0,
                "read": _since(t0, Marks.first(marks.reads, points_wanted)),
                "plotted": _since(t0, Marks.first(marks.plotted, points_wanted)),
                "painted": _since(t0, Marks.first(marks.painted, points_wanted)),
                "rss_mb": rss,
                "peak_rss_mb": peak_rss_mb(),
                "cpu": time.process_time(),
                **children_usage(),
            }

    report(asyncio.run(main()))


def app_latency(path: str, steps: str) -> None:
    """The app watching a live run; per step, the delay from the writer's `time` to each mark."""
    from grpo_tui.app import make_app

    marks = Marks()
    marks.install()
    folder = RunFolder(Path(path))
    steps_n = int(steps)
    writer = start_writer(folder, steps_n)

    async def main() -> dict:
        app = make_app(folder.path.parent, start="watch", watch=folder.path)
        async with app.run_test(size=SIZE) as pilot:
            while not marks.reads or not marks.plotted:
                await pilot.pause(0.01)
            go(writer)
            deadline = time.time() + steps_n / RATE + 15
            while Marks.first(marks.painted, step=steps_n) is None and time.time() < deadline:
                await pilot.pause(0.01)
        # when each step was written: the events' own times, as the writer stamped them
        written = {e.step: e.time for e in read_events(folder.events_file) if isinstance(e, Metrics)}
        out: dict = {"steps": steps_n}
        for name, entries in (("read", marks.reads), ("plotted", marks.plotted), ("painted", marks.painted)):
            out[name] = [
                t - written[s]
                for s in range(1, steps_n + 1)
                if s in written and (t := Marks.first(entries, step=s)) is not None
            ]
        return out

    try:
        report(asyncio.run(main()))
    finally:
        stop_process(writer)


def tb_write(logdir: str, steps: str) -> None:
    """The same scalars as the 100k run, the way transformers' TensorBoardCallback logs them."""
    from torch.utils.tensorboard import SummaryWriter

    steps_n = int(steps)
    rand = random.Random(0).random
    start = time.time() - steps_n * 10.0
    writer = SummaryWriter(logdir)
    for step in range(1, steps_n + 1):
        walltime = start + step * 10.0
        for key, value in metric_values(step, steps_n, rand).items():
            writer.add_scalar(key, value, step, walltime=walltime)
    writer.close()
    report({"bytes": sum(p.stat().st_size for p in Path(logdir).iterdir())})


def tb_load(logdir: str) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    t, cpu = time.perf_counter(), time.process_time()
    acc = EventAccumulator(logdir, size_guidance={"scalars": 0})
    acc.Reload()
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    report({"seconds": seconds, "cpu": cpu, "points": len(acc.Scalars("reward")), "peak_rss_mb": peak_rss_mb()})


PROBES = {
    "stream": stream,
    "app-load": app_load,
    "app-latency": app_latency,
    "tb-write": tb_write,
    "tb-load": tb_load,
}


if __name__ == "__main__":
    PROBES[sys.argv[1]](*sys.argv[2:])
