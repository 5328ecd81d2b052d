"""The app on runs of other machines: a real sshd on 127.0.0.1 is the remote (tests/sshd.py)."""

from __future__ import annotations

import json

import pytest

from grpo_tui.app import make_app
from grpo_tui.executors.hosts import load_hosts
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.screens.runs import RunsScreen
from grpo_tui.widgets.runs_table import RunsTable
from tests.helpers import wait_for
from tests.remote_hosts import remote, sshd  # noqa: F401
from tests.run_fixtures import make_finished_run

from .conftest import header_text, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def hosts_env(remote, monkeypatch):  # noqa: F811
    for key, value in remote.env.items():
        monkeypatch.setenv(key, value)
    hosts = load_hosts(remote.hosts_file)
    return {name: hosts[name] for name in ("gpubox", "otherbox", "deadbox")}


def table_rows(screen) -> list[tuple[str, str]]:
    table = screen.query_one(RunsTable)
    return sorted((str(run.host), run.run_id) for run in table._by_id.values())


async def test_runs_of_two_hosts_in_one_list_and_a_remote_monitor(remote, tiny_model, hosts_env, tmp_path):  # noqa: F811
    done_id = remote.launch(tiny_model, "--max-steps", "12")
    live_id = remote.launch(tiny_model, "--max-steps", "3000", "--save-steps", "1000", host="otherbox")
    done_folder, live_folder = remote.run_folder(done_id), remote.run_folder(live_id, "otherbox")
    wait_for(lambda: json.loads((done_folder / "state.json").read_text()).get("status") == "completed", 120)
    local = make_finished_run(tmp_path / "local", steps=5)

    app = make_app(tmp_path / "local", hosts=hosts_env)
    async with app.run_test(size=(140, 36)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        await wait_until(
            pilot,
            lambda: {("gpubox", done_id), ("otherbox", live_id), ("None", local.name)} <= set(table_rows(screen)),
            timeout=60,
        )
        hosts_line = str(screen.query_one("#hosts").render())
        await wait_until(pilot, lambda: "deadbox ✗" in str(screen.query_one("#hosts").render()), timeout=60)
        hosts_line = str(screen.query_one("#hosts").render())
        assert "gpubox ✓" in hosts_line and "otherbox ✓" in hosts_line and "unreachable" in hosts_line

        # open the finished remote run: history, completions and the host's GPUs
        table = screen.query_one(RunsTable)
        table.move_cursor(row=table.get_row_index(f"gpubox:{done_id}"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen), timeout=60)
        monitor = app.screen
        assert monitor.watched.host == "gpubox"  # a run of that host, through its executor
        await wait_until(pilot, lambda: monitor.status == "completed" and monitor.view.metrics_read == 12, timeout=60)
        assert "step 12/12" in header_text(monitor)
        assert "host gpubox" in str(monitor.query_one("#gpus").render())
        await wait_until(pilot, lambda: monitor.last_sample is not None)  # completions, from the host's samples
        await pilot.press("R")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))

        # a live remote run: steps arrive, and Stop stops it on its host with a checkpoint
        runs_screen = app.screen
        table = runs_screen.query_one(RunsTable)
        await wait_until(pilot, lambda: f"otherbox:{live_id}" in table._by_id)
        table.move_cursor(row=table.get_row_index(f"otherbox:{live_id}"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen), timeout=60)
        monitor = app.screen
        await wait_until(pilot, lambda: monitor.status == "running" and monitor.view.metrics_read >= 3, timeout=90)
        first = monitor.view.metrics_read
        await wait_until(pilot, lambda: monitor.view.metrics_read > first + 2, timeout=60)
        await pilot.press("s")
        await pilot.press("y")
        await wait_until(pilot, lambda: monitor.status == "stopped", timeout=300)
    state = json.loads((live_folder / "state.json").read_text())
    assert state["status"] == "stopped"
    assert any(p.name.startswith("checkpoint-") for p in (live_folder / "checkpoints").iterdir())
    # the remote streams end by themselves once the run has ended
    wait_for(lambda: not remote.processes_of(live_folder), timeout=20)
    assert not remote.processes_of(done_folder)


async def test_the_launch_form_checks_on_the_host_and_starts_the_run_there(
    remote,  # noqa: F811 (the fixture imported above)
    tiny_model,
    hosts_env,
    tmp_path,
    monkeypatch,
):
    from grpo_tui.widgets.host_picker import HostPicker

    from .test_launch_screen import PATTERN, fill, launch_screen, settle, tiny_pattern_run

    monkeypatch.setenv("GRPO_TUI_FAKE_GPUS", "0")
    app = make_app(tmp_path / "local", hosts=hosts_env, start="launch")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_screen(pilot)
        screen.query_one(HostPicker).value = "gpubox"
        await wait_until(pilot, lambda: "new run on gpubox" in str(screen.query_one("#title").render()))
        fill(screen, **{**tiny_pattern_run(tiny_model, 4), "rl_env_module": "/not/on/the/host/env.py"})
        await settle(pilot)
        assert screen.preview_text.endswith(f"--runs-dir {remote.runs}/gpubox --host gpubox")
        await pilot.press("ctrl+l")
        status = screen.query_one("#launch-status")
        await wait_until(pilot, lambda: "is not a file on this machine" in str(status.render()), timeout=60)
        assert "cannot launch on gpubox" in str(status.render())
        # the field is focused after the next refresh (its section may have to open first)
        await wait_until(pilot, lambda: app.focused is screen.form.widget_for("rl_env_module"), timeout=10)

        fill(screen, rl_env_module=PATTERN["rl_env_module"])
        await settle(pilot)
        await pilot.press("ctrl+l")
        await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen), timeout=90)
        monitor = app.screen
        assert monitor.watched.host == "gpubox"  # a run of that host, through its executor
        await wait_until(pilot, lambda: monitor.status == "completed" and monitor.view.metrics_read == 4, timeout=120)
    folder = remote.run_folder(monitor.watched.run.run_id)
    assert json.loads((folder / "state.json").read_text())["status"] == "completed"
