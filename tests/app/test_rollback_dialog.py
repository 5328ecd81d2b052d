"""Roll back… (``b``) on the runs screen and the monitor: the dialog lists the run's checkpoints with the best
preselected, shows the exact ``grpo-tui rollback`` command (which the CLI's parser reads back), refuses a setting
a resume may not change with the CLI's message, and, confirmed, rolls a real trained run back: the new leg
trains from the checkpoint with the new learning rate and records the rewind as the app's."""

from __future__ import annotations

import shlex

from textual.widgets import DataTable, Input

from grpo_tui.app import make_app
from grpo_tui.cli import build_parser
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.screens.rollback import RollbackScreen
from grpo_tui.screens.rollback_action import elsewhere_message
from grpo_tui.screens.runs import RunsScreen
from grpo_tui.services.serving.web_mode import READ_ONLY_ENV, READ_ONLY_NOTICE
from grpo_tui.widgets.remedies_panel import RemediesPanel
from trainer_core import train
from trainer_core.contract.run.events import Metrics, Rewound
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import FINAL

from ..helpers import events_of
from ..rewind_fixtures import RUN_ID, make_rewound_run
from ..run_fixtures import make_finished_run
from .conftest import wait_until
from .test_app import pattern_config

SIZE = (120, 40)


async def open_dialog(pilot) -> RollbackScreen:
    """``b`` on the screen shown, and the dialog once it has read the run's checkpoints."""
    app = pilot.app
    await pilot.press("b")
    await wait_until(pilot, lambda: isinstance(app.screen, RollbackScreen), what="the Roll back dialog")
    dialog = app.screen
    assert isinstance(dialog, RollbackScreen)
    await wait_until(pilot, lambda: dialog.listed is not None, what="the dialog's checkpoints")
    await pilot.pause()
    return dialog


def rows(dialog: RollbackScreen) -> list[list[str]]:
    table = dialog.query_one("#checkpoints", DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


async def test_the_dialog_shows_the_command_and_refuses_a_setting_a_resume_may_not_change(tmp_path):
    run = make_rewound_run(tmp_path / "runs")
    before = (run / "state.json").read_bytes(), (run / "config.yaml").read_bytes()
    app = make_app(tmp_path / "runs", hosts={}, read_only=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and len(app.screen.runs) == 1)
        dialog = await open_dialog(pilot)
        assert rows(dialog) == [
            ["checkpoint-10", "10", "0.433", ""],
            ["checkpoint-20", "20", "0.567", "last"],
            ["checkpoint-30", "30", "0.700", "best abandoned"],
            ["final", "28", "0.350", "final"],
        ]
        runs_dir = str(run.parent)
        base = ["grpo-tui", "rollback", RUN_ID]
        assert dialog.command == "$ " + shlex.join([*base, "--to", "30", "--runs-dir", runs_dir]), "best preselected"
        assert dialog.problem == ""

        await pilot.press("up")  # checkpoint-20, before the KL exploded
        dialog.query_one("#lr", Input).value = "5e-6"
        dialog.query_one("#reason", Input).value = "KL spike at 34 [/]"
        await pilot.pause()
        expected = [*base, "--to", "20", "--set", "lr=5e-6", "--reason", "KL spike at 34 [/]", "--runs-dir", runs_dir]
        assert dialog.command == "$ " + shlex.join(expected)
        args = build_parser().parse_args(shlex.split(dialog.command.removeprefix("$ "))[1:])  # what a shell passes
        assert (args.run, args.to, args.sets, args.reason) == (RUN_ID, "20", ["lr=5e-6"], "KL spike at 34 [/]")

        dialog.query_one("#other", Input).value = "max_steps=40 model=gpt2"
        await pilot.pause()
        assert dialog.problem.startswith(
            "--set model=gpt2: a resume may not change model: it changes the model the checkpoint's weights and "
            "optimizer state belong to."
        ), dialog.problem
        await pilot.click("#rollback")
        await pilot.pause(0.2)
        assert app.screen is dialog, "refused: the dialog stays"

        dialog.query_one("#other", Input).value = ""
        dialog.query_one("#kl", Input).value = "lots"
        await pilot.pause()
        assert dialog.problem == "--set rl_kl_coef=lots: 'lots' is not a number."
        dialog.query_one("#kl", Input).value = ""
        dialog.query_one("#checkpoints", DataTable).focus()
        await pilot.press("down", "down")  # final/ holds no optimizer state
        await pilot.pause()
        assert dialog.problem.startswith("final/ holds the model alone"), dialog.problem

        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen), what="the runs screen again")
    assert ((run / "state.json").read_bytes(), (run / "config.yaml").read_bytes()) == before


def test_a_run_on_a_host_is_told_the_command_that_rolls_it_back_there():
    message = elsewhere_message("20260101-000000-abcdef", "gpu box")
    assert "the app cannot roll back a run on a host yet" in message
    assert (
        "run grpo-tui rollback 20260101-000000-abcdef --host 'gpu box' --to N with N the checkpoint's step" in message
    )


async def refused(pilot, screen_type: type) -> None:
    """``b`` only adds the read-only notice: the same screen stays on top, no dialog opens."""
    app = pilot.app
    app.clear_notifications()
    await pilot.press("b")
    await wait_until(
        pilot,
        lambda: any(str(n.message) == READ_ONLY_NOTICE for n in app._notifications),
        what="the read-only notice",
    )
    await pilot.pause(0.1)
    assert type(app.screen) is screen_type


async def test_a_read_only_app_refuses_roll_back_on_the_runs_screen_and_the_monitor(tmp_path, monkeypatch):
    monkeypatch.setenv(READ_ONLY_ENV, "1")
    make_finished_run(tmp_path / "runs", steps=20)
    app = make_app(tmp_path / "runs", hosts={})
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and len(app.screen.runs) == 1)
        await refused(pilot, RunsScreen)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen), what="the monitor")
        await refused(pilot, MonitorScreen)


async def test_a_trained_run_rolled_back_from_its_monitor_goes_on_from_the_checkpoint_with_the_change(
    tiny_model, runs_dir
):
    result = train(pattern_config(tiny_model, max_steps=2, save_steps=1, lr=2e-3), runs_dir=runs_dir)
    folder = RunFolder(result.path)
    assert folder.read_state()["status"] == "completed"
    app = make_app(runs_dir, hosts={}, read_only=False, start="watch", watch=folder.path)
    async with app.run_test(size=SIZE) as pilot:
        first = app.screen
        assert isinstance(first, MonitorScreen)
        await wait_until(pilot, lambda: first.status == "completed", what="the run's monitor")
        assert not first.query_one("#remedies", RemediesPanel).display, "no rewind yet: no panel"
        dialog = await open_dialog(pilot)
        assert [row[0] for row in rows(dialog)] == ["checkpoint-1", "checkpoint-2", "final"]
        assert " --to 2 " in dialog.command, "no held-out metric: the last is preselected"
        await pilot.press("up")
        dialog.query_one("#lr", Input).value = "1e-3"
        dialog.query_one("#reason", Input).value = "too hot"
        await pilot.pause()
        assert " --to 1 --set lr=1e-3 --reason 'too hot' " in dialog.command and dialog.problem == ""
        await pilot.click("#rollback")

        await wait_until(
            pilot,
            lambda: isinstance(app.screen, MonitorScreen) and app.screen is not first,
            timeout=120,
            what="the run's monitor, opened again",
        )
        monitor = app.screen
        assert isinstance(monitor, MonitorScreen) and monitor.folder.run_id == folder.run_id
        finals = {s.value for s in FINAL}
        await wait_until(
            pilot,
            lambda: folder.read_state().get("status") in finals and folder.read_state().get("restarts"),
            240,
            interval=0.5,
            what="the rolled-back run to end",
            show=lambda: (folder.path / "trainer.log").read_text(errors="replace")[-3000:],
        )
        state = folder.read_state()
        assert state["status"] == "completed", (folder.path / "trainer.log").read_text()[-3000:]
        panel = monitor.query_one("#remedies", RemediesPanel)
        await wait_until(pilot, lambda: panel.display and panel.rewinds, what="the Remedies panel")
        assert panel.text.splitlines() == [
            "↺ Remedies: went back 1 time",
            'step 2 → checkpoint-1 (step 1) · by viewer · "too hot" · lr 0.002 → 0.001',
        ]

    events = events_of(folder.path)
    (rewind,) = [e for e in events if isinstance(e, Rewound)]
    assert (rewind.from_step, rewind.to_step, rewind.checkpoint, str(rewind.by), rewind.reason) == (
        2,
        1,
        "checkpoint-1",
        "viewer",
        "too hot",
    )
    assert rewind.changes == {"lr": {"from": 2e-3, "to": 1e-3}} and rewind.revision == 1
    assert [e.step for e in events if isinstance(e, Metrics)] == [1, 2, 2]
    assert state["resume_from"] == "checkpoints/checkpoint-1" and state["revision"] == 1
