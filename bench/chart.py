"""What does one chart redraw cost, drawn our way and by the plotting widgets we could have adopted?

The monitor redraws its charts as steps arrive, so the cost of one redraw (new data in, the chart on
screen) is what decides the app's CPU while it watches a run. This puts one chart of a long run, alone
in a 64x18 app under ``run_test``, through the same loop for each candidate: append a step, hand the
chart its new data, let Textual paint, and count the process CPU time. Side by side, in one run:

  grpo-tui     ``MetricChart`` drawn from the kept min/max/mean blocks (``services/stream/buckets.py``)
  plotext      textual-plotext drawing the same blocks' min and max lines (how the monitor used to draw)
  textual-plot ``PlotWidget`` (braille mode) drawing the same blocks' min and max lines, and the raw series

Each prints its median CPU per redraw, the first paint, and the ratio to grpo-tui's. Neither textual-plotext
nor textual-plot is a dependency: ``.venv/bin/pip install textual-plotext textual-plot`` to include them (each
one that is missing is left out, and said so).

    python -m bench.chart [--steps 100000] [--redraws 40]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import sys
import time
from array import array

SIZE = (64, 18)


def series_values(steps: int) -> list[float]:
    """A reward curve with noise and one one-step spike, the shape charts must keep."""
    rand = random.Random(7)
    values = [0.1 + 0.7 * (1 - math.exp(-i / (steps / 4))) + rand.gauss(0, 0.05) for i in range(steps)]
    values[int(steps * 0.63)] = 3.0
    return values


class Candidate:
    """A chart widget and how to hand it the series."""

    name = ""

    def widget(self):
        raise NotImplementedError

    def update(self, widget, series, buckets: int) -> None:
        raise NotImplementedError


class Ours(Candidate):
    name = "grpo-tui MetricChart (blocks)"

    def widget(self):
        from grpo_tui.widgets.metric_chart import MetricChart

        return MetricChart("reward")

    def update(self, widget, series, buckets: int) -> None:
        widget.show(series.snapshot("reward", widget.buckets))


class Plotext(Candidate):
    name = "textual-plotext (same blocks)"

    def widget(self):
        from textual_plotext import PlotextPlot

        return PlotextPlot()

    def update(self, widget, series, buckets: int) -> None:
        snap = series.snapshot("reward", buckets)
        plt = widget.plt
        plt.clear_data()
        plt.clear_figure()
        plt.plot(list(snap.steps), list(snap.highs), marker="braille")
        plt.plot(list(snap.steps), list(snap.lows), marker="braille")
        widget.refresh()


class TextualPlot(Candidate):
    def __init__(self, raw: bool):
        self.raw = raw
        self.name = "textual-plot PlotWidget (" + ("every point)" if raw else "same blocks)")

    def widget(self):
        from textual_plot import PlotWidget

        return PlotWidget()

    def update(self, widget, series, buckets: int) -> None:
        from textual_hires_canvas import HiResMode

        widget.clear()
        if self.raw:
            widget.plot(series.steps, series.values, hires_mode=HiResMode.BRAILLE)
            return
        snap = series.snapshot("reward", buckets)
        widget.plot(snap.steps, snap.highs, hires_mode=HiResMode.BRAILLE)
        widget.plot(snap.steps, snap.lows, hires_mode=HiResMode.BRAILLE)


def measure(candidate: Candidate, values: list[float], redraws: int) -> dict:
    from textual.app import App

    from grpo_tui.services.stream.folded import Series

    series = Series()
    series.extend(list(range(1, len(values) + 1)), values)
    holder = {}

    class One(App):
        def compose(self):
            holder["widget"] = candidate.widget()
            yield holder["widget"]

    async def main() -> dict:
        app = One()
        async with app.run_test(size=SIZE) as pilot:
            widget = holder["widget"]
            buckets = SIZE[0] * 2
            t = time.perf_counter()
            candidate.update(widget, series, buckets)
            await pilot.pause(0.05)
            first = time.perf_counter() - t
            costs = []
            step = len(values)
            for _ in range(redraws):
                step += 1
                series.extend([step], [values[-1]])
                cpu = time.process_time()
                candidate.update(widget, series, buckets)
                await pilot.pause(0.03)
                costs.append(time.process_time() - cpu)
        return {"first": first, "median": statistics.median(costs)}

    return asyncio.run(main())


def candidates() -> list[Candidate]:
    out: list[Candidate] = [Ours()]
    try:
        import textual_plotext  # noqa: F401
    except ImportError:
        print("textual-plotext is not installed (.venv/bin/pip install textual-plotext): left out", flush=True)
    else:
        out.append(Plotext())
    try:
        import textual_plot  # noqa: F401
    except ImportError:
        print("textual-plot is not installed (.venv/bin/pip install textual-plot): left out", flush=True)
    else:
        out += [TextualPlot(raw=False), TextualPlot(raw=True)]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chart", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--redraws", type=int, default=40)
    args = parser.parse_args()
    values = array("f", series_values(args.steps))
    print(
        f"one chart {SIZE[0]}x{SIZE[1]}, {args.steps:,} steps, {args.redraws} redraws each (one step appended "
        "before each)\n"
    )
    rows, base = [], None
    for candidate in candidates():
        result = measure(candidate, list(values), args.redraws)
        base = base or result["median"]
        rows.append((candidate.name, result["median"] * 1000, result["first"] * 1000, result["median"] / base))
    print(f"{'chart':40}  {'CPU per redraw':>14}  {'first paint':>11}  {'x grpo-tui':>10}")
    for name, median, first, ratio in rows:
        print(f"{name:40}  {median:11.1f} ms  {first:8.0f} ms  {ratio:9.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
