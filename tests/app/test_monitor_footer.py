"""The monitor's footer offers what applies to the run on screen, and its tabs show their keys.

Stop and Force stop are offered while the run is live and leave the footer when it ends; the keys 1-7 are written
on the tabs they open.
"""

from __future__ import annotations

from textual.widgets import TabbedContent

from grpo_tui.app import make_app
from trainer_core.contract.run.status import Status

from ..run_fixtures import make_finished_run
from .conftest import screen_text, wait_until
from .test_monitor_stream import live_run

TABS = ("1 Charts", "2 Warnings", "3 Completions", "4 Log", "5 GPU", "6 Eval", "7 Checkpoints")


def footer_text(app) -> str:
    return screen_text(app).splitlines()[-1]


async def test_a_finished_runs_footer_offers_no_stop_and_the_tabs_show_their_keys(tmp_path):
    run = make_finished_run(tmp_path / "runs", steps=20)
    app = make_app(tmp_path / "runs", theme="grpo-dark", start="watch", watch=run)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.status is Status.COMPLETED and "Zoom" in footer_text(app))
        await pilot.pause(0.1)
        assert "Stop" not in footer_text(app) and "Force stop" not in footer_text(app), footer_text(app)
        text = screen_text(app)
        assert all(tab in text for tab in TABS), text
        await pilot.press("s")  # no confirm dialog for a run that has ended
        await pilot.pause(0.2)
        assert app.screen is screen
        await pilot.press("3")
        await wait_until(pilot, lambda: screen.query_one(TabbedContent).active == "completions")


async def test_stop_leaves_the_footer_when_the_live_run_ends(tmp_path):
    folder = live_run(tmp_path / "runs")
    app = make_app(tmp_path / "runs", theme="grpo-dark", start="watch", watch=folder.path)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.status is Status.RUNNING and "Stop" in footer_text(app))
        assert "Force stop" in footer_text(app)
        last = folder.read_state().get("max_steps")
        folder.record_end(Status.COMPLETED, "max_steps reached", last)
        await wait_until(pilot, lambda: screen.status is Status.COMPLETED and "Stop" not in footer_text(app))


async def test_a_tab_opened_by_its_key_takes_the_keys_so_enter_opens_a_completion(tmp_path):
    from grpo_tui.screens.transcript import TranscriptScreen
    from grpo_tui.widgets.completions import CompletionsTable

    run = make_finished_run(tmp_path / "runs", steps=20)
    app = make_app(tmp_path / "runs", theme="grpo-dark", start="watch", watch=run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        table = screen.query_one(CompletionsTable)
        await wait_until(pilot, lambda: screen.status is Status.COMPLETED and table.row_count > 0)
        await pilot.press("3")
        await wait_until(pilot, lambda: app.focused is table, what="the completions table focused")
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, TranscriptScreen), what="the transcript")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is screen)
        await pilot.press("4")
        await wait_until(pilot, lambda: app.focused is not None and app.focused.id == "log-view", what="the log")
