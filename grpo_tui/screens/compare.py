"""Two runs' curves on one chart: reward, reward_std, KL — whichever metric is chosen."""

from __future__ import annotations

from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Label
from textual_plotext import PlotextPlot

from trainer_core.contract.run_folder import RunFolder

from ..services.run_stream import RunStream
from ..widgets.metric_chart import downsample

METRICS = ("reward", "reward_std", "kl", "entropy", "loss", "completions/mean_length")


class CompareScreen(Screen):
    BINDINGS = [Binding("m", "next_metric", "Next metric"), Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, paths: list[Path]):
        super().__init__()
        self.paths = paths
        self.streams = [RunStream(RunFolder(p)) for p in paths]
        self.metric = 0

    def compose(self) -> ComposeResult:
        yield Label("", id="legend")
        yield PlotextPlot(id="plot")
        yield Footer()

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def load(self) -> None:
        for stream in self.streams:
            stream.poll()
        self.app.call_from_thread(self.draw)

    def draw(self) -> None:
        key = METRICS[self.metric % len(METRICS)]
        plot = self.query_one(PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        width = max(self.size.width - 10, 10)
        for path, stream in zip(self.paths, self.streams):
            series = stream.series.get(key)
            if series is None or not len(series):
                continue
            xs, lows, highs = downsample(series.steps, series.values, width)
            plt.plot(xs, highs, marker="braille", label=path.name)
        plt.title(key)
        plot.refresh()
        self.query_one("#legend", Label).update(f"comparing {' vs '.join(p.name for p in self.paths)} — {key} (m: next)")

    def action_next_metric(self) -> None:
        self.metric += 1
        self.draw()
