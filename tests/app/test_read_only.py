"""The app served read-only (``grpo-tui serve`` without --allow-control): launch, stop, resume and extend are
refused with one notice, whichever key, screen or palette entry asks; watching works as before."""

from __future__ import annotations

from grpo_tui.app import make_app
from grpo_tui.screens.confirm import ConfirmScreen
from grpo_tui.screens.launch import LaunchScreen
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.screens.runs import RunsScreen
from grpo_tui.services.serving.web_mode import READ_ONLY_ENV, READ_ONLY_NOTICE
from trainer_core.contract.run.status import Status

from ..run_fixtures import make_finished_run
from .conftest import wait_until
from .test_monitor_stream import live_run

SIZE = (120, 30)


def notices(app) -> list[str]:
    return [str(n.message) for n in app._notifications if str(n.message) == READ_ONLY_NOTICE]


async def refused(pilot, key: str, screen_type: type) -> None:
    """``key`` only adds the read-only notice: the same screen stays on top, no dialog opens."""
    app = pilot.app
    app.clear_notifications()  # a notice expires after a few seconds: count from none
    await pilot.press(key)
    await wait_until(pilot, lambda: len(notices(app)) == 1, what=f"the read-only notice after {key!r}")
    await pilot.pause(0.1)
    assert type(app.screen) is screen_type, f"{key!r} opened {type(app.screen).__name__}"


async def test_a_read_only_app_refuses_launch_stop_resume_and_extend_with_a_notice(tmp_path, monkeypatch):
    monkeypatch.setenv(READ_ONLY_ENV, "1")  # as grpo-tui serve starts it
    run = make_finished_run(tmp_path / "runs", steps=20, max_steps=40, status="stopped")
    before = sorted((p.name, p.stat().st_size) for p in run.iterdir())
    app = make_app(tmp_path / "runs", hosts={})
    assert app.read_only
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and len(app.screen.runs) == 1)
        for key in ("s", "u", "e", "n", "N"):  # stop, resume, extend, new run (the screen's and the app's)
            await refused(pilot, key, RunsScreen)
        app.clear_notifications()
        await app.screen.run_action("resume")  # as the command palette runs a screen's binding
        await wait_until(pilot, lambda: len(notices(app)) == 1, what="the read-only notice from the palette")
        assert type(app.screen) is RunsScreen
        await pilot.press("enter")  # opening a run's monitor is watching: allowed
        await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen), what="the monitor")
        app.pop_screen()
        live = live_run(tmp_path / "live")  # stopping is offered for a live run only: refused read-only
        app.open_monitor(live.path)
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, MonitorScreen) and app.screen.status is Status.RUNNING,
            what="the live run's monitor",
        )
        for key in ("s", "f"):
            await refused(pilot, key, MonitorScreen)
        assert not app.screen.stop_requested and not live.stop_file.exists()
        app.action_show_runs()
        await pilot.pause(0.1)
        app.open_launch()  # the form itself, as `grpo-tui launch` opens it: its launch is refused too
        await wait_until(pilot, lambda: isinstance(app.screen, LaunchScreen), what="the launch form")
        await refused(pilot, "ctrl+l", LaunchScreen)
        assert not app.screen.launching
    assert sorted((p.name, p.stat().st_size) for p in run.iterdir()) == before  # no stop request, no new files
    assert len(list((tmp_path / "runs").iterdir())) == 1


async def test_without_read_only_the_same_keys_ask_to_stop_and_resume(tmp_path, monkeypatch):
    monkeypatch.delenv(READ_ONLY_ENV, raising=False)
    make_finished_run(tmp_path / "runs", steps=20, max_steps=40, status="stopped")
    app = make_app(tmp_path / "runs", hosts={})
    assert not app.read_only
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and len(app.screen.runs) == 1)
        await pilot.press("u")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the resume dialog")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen), what="the runs screen")
        live = live_run(tmp_path / "live")
        app.open_monitor(live.path)
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, MonitorScreen) and app.screen.status is Status.RUNNING,
            what="the live run's monitor",
        )
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the stop dialog")
        await pilot.press("escape")
        assert not notices(app)
