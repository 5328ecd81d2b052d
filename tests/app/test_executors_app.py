"""Stops from the app are judged one way, whichever executor made them: a refusal (or a process left after KILL)
is an error on the runs screen as on the monitor, as it is for a run on a host and for ``grpo-tui stop``."""

from __future__ import annotations

import json
import subprocess
import sys

import psutil

from grpo_tui.app import make_app
from grpo_tui.screens.confirm import ConfirmScreen
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.screens.runs import RunsScreen
from tests.run_fixtures import make_finished_run
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import process_start_time

from ..helpers import wait_for, wait_until


def errors(app) -> list[str]:
    return [str(n.message) for n in app._notifications if n.severity == "error"]


async def test_a_stop_that_was_refused_is_an_error_on_the_runs_screen_and_on_the_monitor(tmp_path):
    run = make_finished_run(tmp_path, steps=2)
    folder = RunFolder(run)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # not the run's: no marker
    try:
        wait_for(lambda: "time.sleep" in " ".join(psutil.Process(stranger.pid).cmdline()), 30, what="the stranger")
        state = {
            **folder.read_state(),
            "status": "running",
            "ended": None,
            "summary": None,
            "root_pid": stranger.pid,
            "root_start_time": process_start_time(stranger.pid),
        }
        folder.state_file.write_text(json.dumps(state))
        app = make_app(tmp_path, hosts={})
        async with app.run_test(size=(120, 30)) as pilot:
            screen = app.screen
            assert isinstance(screen, RunsScreen)
            await wait_until(pilot, lambda: len(screen.runs) == 1 and screen.runs[0].status == "running")
            await pilot.press("s")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the stop's confirmation")
            await pilot.press("y")
            await wait_until(pilot, lambda: len(errors(app)) == 1, what="the runs screen's stop reported as an error")
            assert f"Process {stranger.pid}" in errors(app)[0] and "was not signalled" in errors(app)[0]

            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen))
            monitor = app.screen
            assert monitor.watched.host == "local" and monitor.watched.folder.path == run
            await pilot.press("f")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the stop's confirmation")
            await pilot.press("y")
            await wait_until(pilot, lambda: len(errors(app)) == 2, what="the monitor's stop reported as an error")
            assert errors(app)[1] == errors(app)[0]
        assert stranger.poll() is None, "a process that is not the run's is never signalled"
    finally:
        stranger.kill()
        stranger.wait()
