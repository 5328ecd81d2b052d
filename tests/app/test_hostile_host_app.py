"""The app next to a compromised host (``tests/standins/hostile_host.py`` behind the real sshd): its good row is
listed, the hosts line names it once, opening its run is one error, and the app and the other host go on."""

from __future__ import annotations

import pytest

from grpo_tui.app import make_app
from grpo_tui.executors.hosts import load_hosts
from grpo_tui.executors.ssh import close_all
from grpo_tui.screens.runs import RunsScreen
from grpo_tui.widgets.runs_table import RunsTable
from tests.integration.test_hostile_host import GOOD_ON_GPUBOX, hostile_hosts, tree, written_outside_the_cache
from tests.remote_hosts import remote, sshd  # noqa: F401

from .conftest import wait_until


@pytest.fixture
def hosts_env(remote, monkeypatch):  # noqa: F811
    path, env = hostile_hosts(remote)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    hosts = load_hosts(path)
    yield {name: hosts[name] for name in ("hostile", "gpubox")}
    close_all()


def hosts_line(screen) -> str:
    return str(screen.query_one("#hosts").render())


def errors(app) -> list[str]:
    return [str(n.message) for n in app._notifications if n.severity == "error"]


async def test_a_hostile_host_is_one_error_and_takes_nothing_down(remote, hosts_env, tmp_path):  # noqa: F811
    before = tree(remote.dir)
    app = make_app(tmp_path / "local", hosts=hosts_env)
    async with app.run_test(size=(160, 36)) as pilot:
        screen = app.screen
        table = screen.query_one(RunsTable)
        await wait_until(
            pilot, lambda: {"hostile:good-run", f"gpubox:{GOOD_ON_GPUBOX}"} <= set(table._by_id), timeout=60
        )
        await wait_until(pilot, lambda: "hostile ✗" in hosts_line(screen) and "gpubox ✓" in hosts_line(screen))
        line = hosts_line(screen)
        assert line.count("host hostile: left out 8 of the 9 runs it listed") == 1 and "'../../../../x'" in line
        assert not [key for key in table._by_id if key.startswith("hostile:") and key != "hostile:good-run"]

        table.move_cursor(row=table.get_row_index("hostile:good-run"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: errors(app), timeout=60)
        assert len(errors(app)) == 1
        assert errors(app)[0].startswith("host hostile: run good-run: its events stream sent a bad line")
        assert isinstance(app.screen, RunsScreen) and app.is_running

        # the app goes on: the next reads of both hosts still list their good rows
        await pilot.press("r")
        await pilot.pause(0.5)
        assert {"hostile:good-run", f"gpubox:{GOOD_ON_GPUBOX}"} <= set(table._by_id)
    assert written_outside_the_cache(remote.dir, before) == []
    assert not (remote.dir / "x").exists() and not (remote.dir / "cache" / "x").exists()
