"""Extending a completed run from the runs screen: the dialog's default and checks, then real training to the
new max steps in the same run folder (``grpo-tui train --resume RUN --max-steps N`` without the typing)."""

from __future__ import annotations

from textual.widgets import Input

from grpo_tui.app import make_app
from grpo_tui.screens.extend import ExtendScreen, default_max_steps, max_steps_problem
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.screens.runs import RunsScreen
from trainer_core import train
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import Metrics, RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import FINAL

from ..helpers import events_of
from ..run_fixtures import make_finished_run
from .conftest import wait_until
from .test_app import pattern_config

SIZE = (120, 30)


def test_the_default_is_the_old_total_and_half_rounded_up_and_above_the_last_step():
    assert default_max_steps(40, 40) == 60
    assert default_max_steps(3, 3) == 5
    assert default_max_steps(100, 30) == 150
    assert default_max_steps(None, 7) == 11  # an epoch-bound run: from its last step
    assert default_max_steps(2, 10) == 11  # never at or below the last step


def test_the_checks_name_the_value_and_the_fix():
    assert max_steps_problem("60", 40, 60) is None
    assert max_steps_problem(" ", 40, 60) == (
        "max steps is empty: enter a whole number above 40 (the run's last step), e.g. 60."
    )
    assert max_steps_problem("lots", 40, 60) == (
        "max steps must be a whole number, got 'lots': enter a whole number above 40 (the run's last step), e.g. 60."
    )
    assert max_steps_problem("40", 40, 60) == (
        "max steps 40 is not above step 40, the run's last step: enter 41 or more (e.g. 60)."
    )


async def open_dialog(pilot, key: str) -> ExtendScreen:
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and len(app.screen.runs) == 1)
    await pilot.press(key)
    await wait_until(pilot, lambda: isinstance(app.screen, ExtendScreen))
    dialog = app.screen
    assert isinstance(dialog, ExtendScreen)
    return dialog


async def test_a_bad_max_steps_is_refused_in_the_dialog_and_escape_leaves_the_run_alone(tmp_path):
    run = make_finished_run(tmp_path / "runs", steps=40)
    before = (run / "state.json").read_bytes()
    app = make_app(tmp_path / "runs")
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(pilot, "u")  # u on a completed run asks for the new max steps
        field = dialog.query_one("#max-steps", Input)
        assert field.value == "60" and field.has_focus
        assert "completed at step 40 of 40" in str(dialog.query_one("#detail").visual)
        field.value = "40"
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert isinstance(app.screen, ExtendScreen)
        assert dialog.problem == "max steps 40 is not above step 40, the run's last step: enter 41 or more (e.g. 60)."
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert isinstance(app.screen, RunsScreen)
    assert (run / "state.json").read_bytes() == before


async def test_a_completed_run_extended_from_the_runs_screen_trains_to_the_new_max_steps(tiny_model, runs_dir):
    result = train(pattern_config(tiny_model, max_steps=2), runs_dir=runs_dir)
    folder = RunFolder(result.path)
    assert folder.read_state()["status"] == "completed"
    app = make_app(runs_dir)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(pilot, "e")
        field = dialog.query_one("#max-steps", Input)
        assert field.value == "3", "2 steps + 50 %"
        field.value = "4"
        await pilot.click("#resume")

        await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen), timeout=60, what="the run's monitor")
        monitor = app.screen
        assert isinstance(monitor, MonitorScreen) and monitor.folder.run_id == folder.run_id
        finals = {s.value for s in FINAL}
        await wait_until(
            pilot,
            lambda: folder.read_state().get("status") in finals and folder.read_state().get("restarts"),
            240,
            interval=0.5,
            what="the extended run to end",
            show=lambda: (folder.path / "trainer.log").read_text(errors="replace")[-3000:],
        )
        state = folder.read_state()
        assert state["status"] == "completed", (folder.path / "trainer.log").read_text()[-3000:]
        await wait_until(pilot, lambda: monitor.status == "completed" and monitor.view.step == 4, timeout=60)

    events = events_of(folder.path)
    assert [e.step for e in events if isinstance(e, Metrics)] == [1, 2, 3, 4]
    assert len([e for e in events if isinstance(e, RunStarted)]) == 2
    assert RunConfig.load(folder.config_file).max_steps == 4
    assert state["restarts"] == 1 and state["before_resume"]["status"] == "completed"
    assert state["resume_from"] == "checkpoints/checkpoint-2"
    assert (folder.path / "checkpoints" / "checkpoint-4").is_dir() and (folder.path / "final").is_dir()
