"""A long run's backlog is read by a child process while the monitor starts: the charts get every step, the
spike included, and closing the monitor stops a child still reading. Nothing else reads the run's events
meanwhile: not the Checkpoints tab, not the runs list under the monitor."""

from __future__ import annotations

import sys

from grpo_tui.app import make_app
from grpo_tui.screens.runs import RunsScreen
from grpo_tui.services.catalog import checkpoints as checkpoint_list
from grpo_tui.services.stream import backlog
from grpo_tui.widgets.checkpoints_table import CheckpointsPanel
from grpo_tui.widgets.metric_chart import MetricChart

from ..helpers import wait_until
from ..run_fixtures import make_finished_run
from .test_chart_controls import top_row_columns
from .test_monitor_stream import header_text

STEPS, SPIKE = 3000, 1234


async def test_the_monitor_draws_a_backlog_read_by_a_child(tmp_path, monkeypatch):
    monkeypatch.setattr(backlog, "BACKLOG_BYTES", 1)
    run = make_finished_run(tmp_path / "runs", steps=STEPS, reward_spikes={SPIKE: 3.0}, with_warnings=True)
    app = make_app(tmp_path / "runs", start="watch", watch=run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        await wait_until(
            pilot,
            lambda: (
                screen.status == "completed"
                and screen.charts.get("reward") is not None
                and screen.charts["reward"].end_step == STEPS
            ),
        )
        await wait_until(pilot, lambda: screen._backlog.proc is None, what="the reading child reaped")
        assert screen._backlog.in_child and screen._backlog.proc is None  # read by the child, and reaped
        assert screen.view.metrics_read == STEPS and screen.charts["reward"].count == STEPS
        assert screen.warnings and not app._notifications, "warnings already on disk are listed, not popped up"
        chart = screen.query_one("#chart-reward", MetricChart)
        columns = top_row_columns(chart)  # the spike, and the warnings' rules
        assert any(abs(column / chart.plot_width - SPIKE / STEPS) < 0.02 for column in columns), columns


async def test_closing_the_monitor_stops_a_child_still_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(backlog, "BACKLOG_BYTES", 1)
    monkeypatch.setattr(backlog.Backlog, "command", lambda self: [sys.executable, "-c", "import time; time.sleep(60)"])
    run = make_finished_run(tmp_path / "runs", steps=40, with_warnings=False)
    app = make_app(tmp_path / "runs", start="watch", watch=run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        proc = screen._backlog.proc
        await wait_until(pilot, lambda: "COMPLETED" in header_text(screen))
        assert proc.poll() is None, "the child is still reading, and the header shows the run already"
        assert screen.folder.run_id in header_text(screen) and screen.view.metrics_read == 0
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is not screen)
        await wait_until(pilot, lambda: proc.poll() is not None, 10, what="the reading child to end")
        assert proc.returncode is not None and proc.returncode < 0, "the child was killed"


async def test_the_monitor_opened_at_start_is_the_only_reader_of_the_events(tmp_path, monkeypatch):
    """The Checkpoints tab is listed from the events the monitor's reader found (the file is not scanned again),
    and the runs list under the monitor is read once it is shown, not while the monitor reads its run."""
    scans: list[tuple] = []
    monkeypatch.setattr(checkpoint_list, "scan_events", lambda *args: scans.append(args) or ([], 0))
    run = make_finished_run(tmp_path / "runs", steps=40, with_warnings=False)
    app = make_app(tmp_path / "runs", start="watch", watch=run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        panel = screen.query_one("#checkpoints-panel", CheckpointsPanel)
        await wait_until(pilot, lambda: len(panel.listed.rows) == 4)
        assert [row.step for row in panel.listed.rows] == [10, 20, 30, 40] and not scans
        runs = app.screen_stack[-2]
        assert isinstance(runs, RunsScreen) and not runs.runs, "the list is not read under the monitor"
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is runs and len(runs.runs) == 1)
