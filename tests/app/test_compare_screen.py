"""The compare screen as a user reaches it: three runs marked on the runs screen, overlaid on braille charts.

Each run is drawn in its own theme colour and named in the legend in that colour; the cursor and the zoom
act on every chart at once, as in the monitor, and the legend reads each run's value under the cursor.
"""

from __future__ import annotations

import pytest
from textual.content import Content

from grpo_tui.app import make_app
from grpo_tui.screens.compare import CompareScreen
from grpo_tui.theming import series_colors, theme_colors, theme_data
from grpo_tui.widgets.overlay_chart import SERIES_COLOURS, OverlayChart, series_colour

from ..run_fixtures import make_three_runs
from .conftest import screen_text, wait_until

SIZE = (120, 40)


def colours_drawn(chart: OverlayChart) -> set:
    """The foreground colours of the plot's dots."""
    return {
        seg.style.color
        for strip in chart._strips
        for seg in strip
        if seg.style and seg.style.color and any(0x2800 < ord(ch) <= 0x28FF for ch in seg.text)
    }


async def open_compare(pilot, count: int = 3) -> CompareScreen:
    app = pilot.app
    await wait_until(pilot, lambda: len(getattr(app.screen, "runs", [])) == count)
    keys = ["space"] + ["down", "space"] * (count - 1)
    await pilot.press(*keys, "c")
    await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and bool(app.screen.runs))
    screen = app.screen
    assert isinstance(screen, CompareScreen)
    await wait_until(pilot, lambda: all(len(c.drawn) for c in screen.charts if c.key == "reward"))
    await pilot.pause(0.2)
    return screen


async def test_three_runs_overlaid_in_three_colours_with_a_legend_cursor_and_zoom(tmp_path):
    failed, stopped, completed = make_three_runs(tmp_path / "runs")
    app = make_app(tmp_path / "runs", theme="grpo-dark")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_compare(pilot)
        assert screen.paths == [failed, stopped, completed]  # in the order they were marked
        reward = screen.query_one("#chart-reward", OverlayChart)
        assert [s.end_step for s in reward.drawn] == [12, 25, 40]
        assert reward.domain() == (1, 40)

        wanted = {reward.get_component_rich_style(f"overlay-chart--series-{i}").color for i in range(3)}
        assert len(wanted) == 3, "three runs, three colours"
        assert colours_drawn(reward) == wanted

        legend = screen.query_one("#legend").visual
        assert isinstance(legend, Content)
        text = screen.legend_text
        assert text.startswith("comparing 3 runs")
        for index, path in enumerate((failed, stopped, completed)):
            line = next(line for line in text.splitlines() if path.name in line)
            assert line.startswith("━━ ")
            start = text.index(path.name)
            styles = {str(span.style) for span in legend.spans if span.start <= start < span.end}
            assert any(series_colour(index) in style for style in styles), (path.name, styles)
        assert "failed · step 12/40" in text and "completed · step 40/40" in text

        kl = screen.query_one("#chart-kl", OverlayChart)
        assert [s.end_step for s in kl.drawn] == [12, 40], "the stopped run measured no KL (rl_kl_coef 0)"

        await pilot.press("left_square_bracket")
        await pilot.pause(0.1)
        assert screen.cursor == 40 and all(chart.cursor == 40 for chart in screen.charts)
        assert "at step 40" in screen.legend_text and reward.border_subtitle == "step 40"
        completed_line = next(line for line in screen.legend_text.splitlines() if completed.name in line)
        assert "reward 0." in completed_line
        failed_line = next(line for line in screen.legend_text.splitlines() if failed.name in line)
        assert "reward —" in failed_line, "the failed run has no step 40"

        await pilot.press(*["left_square_bracket"] * 30)  # a cell is narrower than a step here: a step a press
        await pilot.pause(0.1)
        assert screen.cursor is not None and screen.cursor <= 12
        failed_line = next(line for line in screen.legend_text.splitlines() if failed.name in line)
        assert "reward 0." in failed_line, "under the cursor now"
        before = screen.cursor
        await pilot.press("right_square_bracket")
        await pilot.pause(0.1)
        assert screen.cursor > before
        await pilot.press("c")
        await pilot.pause(0.1)
        assert screen.cursor is None and "at step" not in screen.legend_text

        await pilot.click(reward, offset=(9 + 10, 3))  # border, y labels and axis, then 10 cells into the plot
        await pilot.pause(0.1)
        assert screen.cursor is not None and 1 < screen.cursor < 40

        await pilot.press("plus")
        await wait_until(pilot, lambda: screen.window == 20 and reward.domain() == (21, 40))
        await wait_until(pilot, lambda: [s.steps[0] >= 21 for s in reward.drawn] == [True, True])
        assert [s.end_step for s in reward.drawn] == [25, 40], "the failed run ended before the window"
        assert "last 20 steps" in reward.border_subtitle
        await pilot.press("0")
        await wait_until(pilot, lambda: screen.window is None and len(reward.drawn) == 3)

        extra = screen.query_one("#chart-extra", OverlayChart)
        first = extra.key
        await pilot.press("m")
        await wait_until(pilot, lambda: extra.key != first and len(extra.drawn) == 3)
        assert extra.key in screen.keys
        assert "comparing 3 runs" in screen_text(app)


async def test_one_marked_run_is_not_enough(tmp_path):
    make_three_runs(tmp_path / "runs")
    app = make_app(tmp_path / "runs")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(getattr(app.screen, "runs", [])) == 3)
        await pilot.press("space", "c")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, CompareScreen)
        assert any("Mark two or more runs" in str(n.message) for n in app._notifications)


@pytest.mark.parametrize("theme", [data["name"] for data in theme_data()])
def test_every_theme_gives_six_run_colours_none_of_them_a_warnings(theme):
    colours = series_colors(theme)
    roles = theme_colors(theme)
    assert len(colours) == len(SERIES_COLOURS) == 6 and len(set(colours)) == 6, colours
    assert not {c.upper() for c in colours} & {roles["warning"].upper(), roles["error"].upper()}, (theme, colours)


async def test_a_theme_of_textuals_own_draws_the_runs_in_the_default_themes_series_colours(tmp_path):
    make_three_runs(tmp_path / "runs")
    app = make_app(tmp_path / "runs", theme="grpo-dark")
    async with app.run_test(size=SIZE) as pilot:
        app.theme = "textual-dark"  # as the command palette switches it; it has no chart-series variables
        await pilot.pause(0.1)
        screen = await open_compare(pilot)
        reward = screen.query_one("#chart-reward", OverlayChart)
        drawn = {reward.get_component_rich_style(f"overlay-chart--series-{i}").color for i in range(3)}
        assert {c.name.upper() for c in drawn if c} == {c.upper() for c in series_colors("grpo-dark")[:3]}
