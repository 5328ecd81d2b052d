"""Two runs' curves on one chart: reward, reward_std, KL — whichever metric is chosen.

A worker reads each run once and posts frozen snapshots of every metric the screen can show, already
downsampled to the plot's width; the streams themselves stay in the worker and are dropped with it, so
switching metrics (``m``) only redraws what the screen already holds.
"""

from __future__ import annotations

from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Label
from textual_plotext import PlotextPlot

from trainer_core.contract.run_folder import RunFolder

from ..safe_text import clean_line, literal
from ..services.run_stream import ChartData, ChartRequest, RunStream

METRICS = ("reward", "reward_std", "kl", "entropy", "loss", "completions/mean_length")


class CompareScreen(Screen):
    BINDINGS = [Binding("m", "next_metric", "Next metric"), Binding("escape", "app.pop_screen", "Back")]

    class Loaded(Message):
        """Each run's snapshots, in the order of the screen's paths."""

        def __init__(self, runs: tuple[ChartData, ...]):
            super().__init__()
            self.runs = runs

    def __init__(self, paths: list[Path]):
        super().__init__()
        self.paths = paths
        self.runs: tuple[ChartData, ...] = ()
        self.metric = 0

    def compose(self) -> ComposeResult:
        yield Label("", id="legend")
        yield PlotextPlot(id="plot")
        yield Footer()

    def on_mount(self) -> None:
        width = (self.size.width or self.app.size.width) - 10
        self.load(ChartRequest(1, tuple((key, max(width, 10)) for key in METRICS)))

    @work(thread=True, exclusive=True, exit_on_error=False)
    def load(self, request: ChartRequest) -> None:
        runs = []
        for path in self.paths:
            stream = RunStream(RunFolder(path))
            stream.poll()
            runs.append(stream.charts(request))
        self.post_message(self.Loaded(tuple(runs)))

    def on_compare_screen_loaded(self, message: Loaded) -> None:
        self.runs = message.runs
        self.draw()

    def draw(self) -> None:
        key = METRICS[self.metric % len(METRICS)]
        plot = self.query_one(PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        for path, charts in zip(self.paths, self.runs):
            series = charts.get(key)
            if series is None or not series.count:
                continue
            plt.plot(list(series.steps), list(series.highs), marker="braille", label=clean_line(path.name))
        plt.title(key)
        plot.refresh()
        names = " vs ".join(p.name for p in self.paths)
        self.query_one("#legend", Label).update(literal(clean_line(f"comparing {names} — {key} (m: next)")))

    def action_next_metric(self) -> None:
        self.metric += 1
        self.draw()
