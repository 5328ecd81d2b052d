"""The monitor's charts as a user reads them: a spike among thousands of steps, zoom, the cursor, EMA."""

from __future__ import annotations

import math
import time

from textual import events
from textual.app import App

from grpo_tui.app import make_app
from grpo_tui.services.stream.folded import Series
from grpo_tui.widgets.metric_chart import TITLE_SECONDS, MetricChart

from ..run_fixtures import make_finished_run
from .conftest import wait_until

STEPS, SPIKE = 5000, 3137


def top_row_columns(chart: MetricChart) -> list[int]:
    """The cell columns of the plot's first row that hold dots (the y labels and axis cut off)."""
    row = chart.text.splitlines()[0][8:]
    return [x for x, ch in enumerate(row) if 0x2800 < ord(ch) <= 0x28FF]


async def open_monitor(pilot):
    screen = pilot.app.screen
    await wait_until(
        pilot,
        lambda: (
            screen.status == "completed"
            and screen.charts.get("reward") is not None
            and screen.charts["reward"].end_step == STEPS
        ),
    )
    await pilot.pause(0.2)
    return screen, screen.query_one("#chart-reward", MetricChart)


async def test_a_one_step_spike_shows_and_zoom_keeps_the_newest_steps(tmp_path):
    run = make_finished_run(tmp_path / "runs", steps=STEPS, reward_spikes={SPIKE: 3.0}, with_warnings=False)
    app = make_app(tmp_path / "runs", theme="grpo-dark", start="watch", watch=run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen, chart = await open_monitor(pilot)
        spike_cells = top_row_columns(chart)
        assert len(spike_cells) == 1, "the spike reaches the top row in one column only"
        where = spike_cells[0] / chart.plot_width
        assert abs(where - SPIKE / STEPS) < 0.05
        assert chart.text.splitlines()[0].strip().startswith("3"), "the y axis reaches the spike's value"

        await pilot.press("plus")
        await wait_until(pilot, lambda: screen.charts.request.window == 2000 and screen.charts["reward"].window == 2000)
        await pilot.pause(0.1)
        zoomed = screen.charts["reward"]
        assert STEPS - 2000 - zoomed.size < zoomed.steps[0] <= STEPS - 2000 + 1 and zoomed.end_step == STEPS
        assert "last 2,000 steps" in chart.border_subtitle
        assert top_row_columns(chart), "the spike at step 3137 is still inside the last 2000 steps"
        await pilot.press("plus", "plus")
        await wait_until(pilot, lambda: screen.charts.request.window == 500)
        await pilot.pause(0.1)
        assert screen.charts["reward"].steps[0] > SPIKE and "3" not in chart.text.splitlines()[0][:7]

        await pilot.press("minus")
        await wait_until(pilot, lambda: screen.charts.request.window == 1000)
        await pilot.press("0")
        await wait_until(pilot, lambda: screen.charts.request.window is None)

        chart.post_message(events.MouseScrollUp(chart, 30, 5, 0, -1, 0, False, False, False))
        await wait_until(pilot, lambda: screen.charts.request.window == 2000)
        chart.post_message(events.MouseScrollDown(chart, 30, 5, 0, 1, 0, False, False, False))
        await wait_until(pilot, lambda: screen.charts.request.window is None)


async def test_the_cursor_reads_steps_and_values_and_ema_smooths(tmp_path):
    run = make_finished_run(tmp_path / "runs", steps=60, with_warnings=False)
    app = make_app(tmp_path / "runs", theme="grpo-dark", start="watch", watch=run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = pilot.app.screen
        await wait_until(
            pilot,
            lambda: (
                screen.status == "completed"
                and screen.charts.get("reward") is not None
                and screen.charts["reward"].end_step == 60
            ),
        )
        await pilot.pause(0.2)
        chart = screen.query_one("#chart-reward", MetricChart)
        kl = screen.query_one("#chart-kl", MetricChart)
        await pilot.press("left_square_bracket")
        await pilot.pause(0.1)
        assert screen.grid.cursor == 60 and chart.cursor == 60 and kl.cursor == 60
        assert chart.border_subtitle.startswith("step 60: ")
        await pilot.press("left_square_bracket", "left_square_bracket")
        await pilot.pause(0.1)
        assert screen.grid.cursor < 60
        snap = screen.charts["reward"]
        j = snap.steps.index(screen.grid.cursor)
        assert chart.border_subtitle.startswith(f"step {screen.grid.cursor}: {snap.lows[j]:.3g}")
        await pilot.press("c")
        await pilot.pause(0.1)
        assert screen.grid.cursor is None and not chart.border_subtitle

        await pilot.click(chart, offset=(9 + 10, 3))  # border, y labels and axis, then 10 cells into the plot
        await pilot.pause(0.1)
        assert screen.grid.cursor is not None and 1 < screen.grid.cursor < 60 and chart.border_subtitle

        raw = chart.text
        await pilot.press("e")
        await pilot.pause(0.1)
        assert chart.smooth and "EMA" in chart.border_subtitle and chart.text != raw
        await pilot.press("e")
        await pilot.pause(0.1)
        assert not chart.smooth and chart.text == raw


async def test_a_new_theme_redraws_the_charts_in_its_colours(tmp_path):
    run = make_finished_run(tmp_path / "runs", steps=60)
    app = make_app(tmp_path / "runs", theme="grpo-dark", start="watch", watch=run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = pilot.app.screen
        await wait_until(pilot, lambda: screen.status == "completed" and screen.charts.get("reward") is not None)
        await pilot.pause(0.2)
        chart = screen.query_one("#chart-reward", MetricChart)

        def colours() -> set:
            return {seg.style.color for strip in chart._strips for seg in strip if seg.style and seg.style.color}

        dark = colours()
        app.theme = "grpo-light"
        await wait_until(pilot, lambda: colours() != dark)
        assert chart.get_component_rich_style("metric-chart--line").color in colours()


class OneChart(App):
    def compose(self):
        yield MetricChart("reward", id="chart")


async def test_a_new_step_repaints_the_title_line_and_the_rows_that_changed():
    app = OneChart()
    async with app.run_test(size=(70, 16)) as pilot:
        chart = app.query_one(MetricChart)
        series = Series()
        series.extend(list(range(1, 45)), [0.5 + 0.3 * math.sin(step / 5) for step in range(1, 45)])
        chart.show(series.snapshot("reward", chart.buckets))
        await pilot.pause(TITLE_SECONDS)
        calls = []
        real = chart.refresh
        chart.refresh = lambda *regions, **kwargs: (calls.append(regions), real(*regions, **kwargs))[1]
        series.extend([45], [0.6])  # the plot still spans steps 1-50 and the same values: only a few rows change
        chart.show(series.snapshot("reward", chart.buckets))
        await pilot.pause()
        assert (
            chart.border_title == "reward  0.6000"
            and "reward  0.6000" in app.screen._compositor.render_strips()[0].text
        )
        assert calls and all(calls), "no call repainted the whole chart"
        regions = [region for call in calls for region in call]
        [title] = [r for r in regions if r.y < 0]
        assert title.height == 1 and title.width == chart.outer_size.width, "the title line, border included"
        lines = [r for r in regions if r.y >= 0]
        assert lines and len(lines) < chart.size.height - 2, "only the plot rows at the new step changed"
        assert all(r.height == 1 and r.x == -1 and r.width == chart.outer_size.width for r in lines), "borders too"

        chart._title_at = time.monotonic()  # the title just changed, however long the checks above took
        series.extend([46], [0.55])  # at once: the plot takes it, the title's value waits
        chart.show(series.snapshot("reward", chart.buckets))
        await pilot.pause()
        assert chart.border_title == "reward  0.6000" and chart._series.end_step == 46
        await pilot.pause(3 * TITLE_SECONDS)  # no redraw comes: the newest value shows all the same
        assert chart.border_title == "reward  0.5500"


class TwoCharts(App):
    CSS = "MetricChart { height: 14; width: 48; }"

    def compose(self):
        yield MetricChart("reward", id="live")
        yield MetricChart("reward", id="fresh")


async def test_a_chart_redrawn_step_by_step_shows_what_a_fresh_one_draws():
    """The live chart redraws only the dot columns that changed; it must match a chart drawn from scratch."""
    app = TwoCharts()
    async with app.run_test(size=(60, 30)) as pilot:
        live, fresh = app.query_one("#live", MetricChart), app.query_one("#fresh", MetricChart)
        series = Series()
        for step in range(1, 400):
            value = 0.5 + 0.3 * math.sin(step / 7) + (2.0 if step == 150 else 0.0) + (step > 300) * 0.8
            series.extend([step], [value])
            if step % 3 and step not in (150, 151, 300, 301):
                continue
            snapshot = series.snapshot("reward", live.buckets)
            markers = (120,) if step > 200 else ()
            live.show(snapshot, markers)
            fresh._kept, fresh._spans_kept, fresh._row_keys = None, None, []  # as if never drawn
            fresh.show(snapshot, markers)
            assert live.text == fresh.text, f"at step {step}"
        await pilot.pause()
