"""What a chart asks of the screen that holds it: the same three messages from the monitor's charts and the
compare screen's, so each holder answers them the same way (``on_chart_needs_data``, ``on_chart_zoom``,
``on_chart_pointed``)."""

from __future__ import annotations

from textual.message import Message
from textual.widget import Widget


class NeedsData(Message, namespace="chart"):
    """The chart's width no longer matches its snapshot's blocks: it wants one built for ``buckets``."""

    def __init__(self, chart: Widget, buckets: int):
        super().__init__()
        self.chart = chart
        self.buckets = buckets


class Zoom(Message, namespace="chart"):
    """The mouse wheel over the chart: ``direction`` 1 to zoom in (fewer steps), -1 out."""

    def __init__(self, chart: Widget, direction: int):
        super().__init__()
        self.chart = chart
        self.direction = direction


class Pointed(Message, namespace="chart"):
    """A click on the plot, at ``step``."""

    def __init__(self, chart: Widget, step: int):
        super().__init__()
        self.chart = chart
        self.step = step
