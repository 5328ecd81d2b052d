"""The monitor's four charts, which share one x range, one cursor and one smoothing switch.

Zooming, the cursor and EMA act on every chart together, like a tracker's panel of plots, so their state
lives here rather than in each chart. Zoom and the cursor are ``ChartControls``, which the compare screen
uses too: the keys, the mouse wheel and a click act alike on both screens' charts. The grid never reads a
run: it says which snapshots it wants (``Wanted``: a width per metric and the window of steps) and draws the
``ChartData`` its screen gets back from the reader. The held-out evals its screen hands it (``set_evals``) are few: the grid keeps them and
overlays one metric of them on the reward chart, the one ``next_eval_metric`` pages to (``v``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Grid
from textual.message import Message

from grpo_tui.services.stream.folded import EMPTY_CHARTS, TOOL_METRICS, ChartData
from trainer_core.contract.run.events import Eval

from . import chart_messages
from .chart_base import ChartBase
from .metric_chart import MetricChart

if TYPE_CHECKING:
    from textual.widget import Widget as _Host  # what the controls are mixed into: a widget or a screen
else:
    _Host = object

MAIN_CHARTS = (("reward", "reward"), ("reward_std", "reward_std"), ("kl", "KL"))
MAIN_KEYS = frozenset(key for key, _ in MAIN_CHARTS)
EXTRA_METRICS = ("loss", "completions/mean_length", "entropy", "clip_ratio/region_mean", "grad_norm", "learning_rate")
MIN_WINDOW = 20  # zooming in stops at this many steps


def nice_windows(limit: int) -> list[int]:
    """Window sizes a user can read at a glance (20, 50, 100, 200, 500, 1,000 ...) below ``limit``."""
    out, scale = [], 10
    while scale < limit:
        out += [w for w in (2 * scale, 5 * scale, 10 * scale) if MIN_WINDOW <= w < limit]
        scale *= 10
    return out


def extra_keys(keys) -> list[str]:
    """The metrics the fourth chart cycles through (``m``), among those the run has logged: an agentic run's
    tool metrics first."""
    return [k for k in (*TOOL_METRICS, *EXTRA_METRICS) if k in keys] + sorted(
        k for k in keys if k.startswith("rewards/") and k.endswith("/mean")
    )


def zoomed(window: int | None, shown: int | None, total: int, direction: int) -> int | None:
    """The window after a zoom from ``window`` (None: every step) with ``shown`` of ``total`` steps on screen:
    about half (``direction`` 1) or twice (-1) the steps, keeping the newest; 0 (or nothing shown) every step.
    The monitor's grid and the compare screen zoom alike."""
    if direction == 0 or shown is None:
        return None
    if direction > 0:
        smaller = [w for w in nice_windows(total) if w <= max(shown // 2, MIN_WINDOW)]
        return smaller[-1] if smaller else window
    if window is None:
        return None
    larger = [w for w in nice_windows(total) if w >= window * 2]
    return larger[0] if larger else None


class ChartControls(_Host):
    """Zoom and the cursor of a set of charts drawn together (the ``ChartBase`` widgets under it): one window
    of steps and one cursor for all of them. Mixed into the monitor's ``ChartGrid`` and the compare screen,
    which say what they draw through three hooks: ``draw`` (every chart again, from the state here),
    ``_request`` (ask for snapshots at the charts' widths over ``window``) and ``_extent`` (the steps shown
    and the last step, which zooming is measured on)."""

    window: int | None = None  # the newest steps shown; None: every step
    cursor: int | None = None  # a step
    _want_pending = False

    def draw(self) -> None:
        """Draw every chart again from the state here (window, cursor) and the snapshots last received."""
        raise NotImplementedError

    def _request(self) -> None:
        """Ask for snapshots at the charts' widths over ``window`` (``want`` calls it once the layout settles)."""
        raise NotImplementedError

    def _extent(self) -> tuple[int | None, int]:
        """How many steps are on screen (None: none) and the newest step: what zooming is measured on."""
        raise NotImplementedError

    def want(self) -> None:
        """Ask for new snapshots once, after the layout settles (the charts resize together)."""
        if not self._want_pending:
            self._want_pending = True
            self.call_after_refresh(self._post_want)

    def _post_want(self) -> None:
        self._want_pending = False
        self._request()

    def zoom(self, direction: int) -> None:
        """Show about half (1) or twice (-1) the steps, keeping the newest; 0 shows every step."""
        window = zoomed(self.window, *self._extent(), direction)
        if window != self.window:
            self.window = window
            self.want()

    def move_cursor(self, cells: int) -> None:
        """Put the cursor on the newest step, or move it by ``cells`` cells, as the first chart with data
        (the reward chart, unless it has none) reads steps."""
        chart = next((c for c in self.query(ChartBase) if c.has_data), None)
        if chart is None:
            return
        self.cursor = chart.step_beside(self.cursor, cells if self.cursor is not None else 0)
        self.draw()

    def hide_cursor(self) -> None:
        self.cursor = None
        self.draw()

    def on_chart_needs_data(self, message: chart_messages.NeedsData) -> None:
        message.stop()
        self.want()

    def on_chart_zoom(self, message: chart_messages.Zoom) -> None:
        message.stop()
        self.zoom(message.direction)

    def on_chart_pointed(self, message: chart_messages.Pointed) -> None:
        message.stop()
        self.cursor = message.step
        self.draw()


class ChartGrid(ChartControls, Grid):
    DEFAULT_CSS = """
    ChartGrid { grid-size: 2 2; grid-gutter: 0 1; }
    """

    class Wanted(Message):
        """The grid needs snapshots at these widths over the last ``window`` steps (None: all of them)."""

        def __init__(self, widths: tuple[tuple[str, int], ...], window: int | None):
            super().__init__()
            self.widths = widths
            self.window = window

    def __init__(self, kl_measured: bool = True, id: str | None = None):
        super().__init__(id=id)
        self.kl_measured = kl_measured
        self.data: ChartData = EMPTY_CHARTS  # what the charts last drew
        self.markers: tuple[int, ...] = ()
        self.extra_keys: list[str] = []
        self.extra_index = 0
        self.smooth = False
        self.evals: tuple[Eval, ...] = ()  # by step
        self.eval_keys: list[str] = []  # the held-out metrics the reward chart can overlay (``NAME``, ``NAME/pass@K``)
        self.eval_index = 0

    def compose(self) -> ComposeResult:
        for key, title in MAIN_CHARTS:
            message = (
                None if key != "kl" or self.kl_measured else "KL not measured: rl_kl_coef = 0 (the KL penalty is off)."
            )
            yield MetricChart(key, title, empty_message=message, id=f"chart-{key}")
        yield MetricChart("loss", "loss", id="chart-extra")

    # -- what the screen calls ---------------------------------------------------------------------------

    def widths(self) -> tuple[tuple[str, int], ...]:
        widths = [(key, self.query_one(f"#chart-{key}", MetricChart).buckets) for key, _ in MAIN_CHARTS]
        extra = self.extra_key
        if extra is not None:
            widths.append((extra, self.query_one("#chart-extra", MetricChart).buckets))
        return tuple(widths)

    @property
    def extra_key(self) -> str | None:
        return self.extra_keys[self.extra_index % len(self.extra_keys)] if self.extra_keys else None

    def set_keys(self, keys) -> None:
        """The run's charted metrics so far; a new one may join the fourth chart's cycle."""
        had = self.extra_key
        self.extra_keys = extra_keys(keys)
        if self.extra_key != had:
            self.want()

    @property
    def eval_key(self) -> str | None:
        """The held-out metric overlaid on the reward chart."""
        return self.eval_keys[self.eval_index % len(self.eval_keys)] if self.eval_keys else None

    def set_evals(self, evals: Mapping[int, Eval], keys: list[str], default: str | None = None) -> None:
        """The run's evals so far and their metrics; the overlay stays on its metric, else starts on ``default``."""
        had = self.eval_key
        self.evals = tuple(evals[step] for step in sorted(evals))
        self.eval_keys = list(keys)
        keep = had if had in self.eval_keys else default
        self.eval_index = self.eval_keys.index(keep) if keep in self.eval_keys else 0
        self.draw()

    def next_eval_metric(self) -> None:
        if self.eval_keys:
            self.eval_index = (self.eval_index + 1) % len(self.eval_keys)
            self.draw()

    def eval_points(self) -> tuple[tuple[int, float], ...]:
        """The overlaid metric at each eval's step."""
        key = self.eval_key
        found = ((e.step, e.value(key)) for e in self.evals) if key is not None else ()
        return tuple((step, value) for step, value in found if value is not None)

    def _eval_title(self, points: tuple[tuple[int, float], ...]) -> str:
        key = self.eval_key
        if key is None:
            return ""
        value = f" {points[-1][1]:.3f}" if points else ""
        return f"eval {key}{value}"  # the footer names the key that pages (v)

    def draw(self, data: ChartData | None = None, markers=None) -> None:
        if data is not None:
            if data.request.serial < self.data.request.serial:  # overtaken by a newer answer
                return
            self.data = data
        if markers is not None:
            self.markers = tuple(markers)
        data = self.data
        points = self.eval_points()
        title = self._eval_title(points)
        for key, _ in MAIN_CHARTS:
            reward = key == "reward"  # the held-out evals go over the training reward
            self.query_one(f"#chart-{key}", MetricChart).show(
                data.get(key),
                self.markers,
                cursor=self.cursor,
                smooth=self.smooth,
                points=points if reward else (),
                points_title=title if reward else "",
                abandoned=data.abandoned.get(key, ()),
                rewinds=data.rewinds,
            )
        extra = next((key for key, _ in data.request.widths if key not in MAIN_KEYS), None)
        if extra is not None:
            chart = self.query_one("#chart-extra", MetricChart)
            chart.title = f"{extra}  [m: next]"
            chart.show(
                data.get(extra),
                self.markers,
                cursor=self.cursor,
                smooth=self.smooth,
                abandoned=data.abandoned.get(extra, ()),
                rewinds=data.rewinds,
            )

    def _request(self) -> None:
        self.post_message(self.Wanted(self.widths(), self.window))

    # -- zoom and smoothing -------------------------------------------------------------------------------

    def _lead(self):
        """The snapshot zoom is measured on: reward's, or the first there is."""
        return self.data.get("reward") or next(iter(self.data.series.values()), None)

    def _extent(self) -> tuple[int | None, int]:
        series = self._lead()
        if series is None or series.end_step is None or not series.steps:
            return None, 0
        return series.end_step - series.steps[0] + 1, series.end_step

    def toggle_smooth(self) -> None:
        self.smooth = not self.smooth
        self.draw()
