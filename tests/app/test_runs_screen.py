"""The runs screen under Pilot on hand-written run folders: rows change in place, thousands fill in batches.

The screen must never rebuild its table for a refresh: a run that changed updates its cells, a new run is
inserted in order, a removed one drops out, and the cursor stays on the run it was on.
"""

from __future__ import annotations

import json
import os
import shutil

from textual.coordinate import Coordinate
from textual.widgets import DataTable

from grpo_tui.app import make_app
from grpo_tui.screens import runs as runs_screen
from grpo_tui.screens.runs import RunsScreen
from grpo_tui.widgets import runs_table
from grpo_tui.widgets.runs_table import RunsTable
from trainer_core.contract.run.folder import FORMAT_VERSION, RunFolder
from trainer_core.contract.run.process import process_start_time
from trainer_core.contract.run.status import Status

from ..run_fixtures import BASE_TIME, make_finished_run, make_three_runs
from ..unit.test_catalog import emit_steps
from .conftest import wait_until

SIZE = (120, 30)


def row_ids(table: DataTable) -> list[str]:
    return [table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value for row in range(table.row_count)]


def cell(table: DataTable, run_id: str, column: str) -> str:
    value = table.get_cell(run_id, column)
    return getattr(value, "plain", value)


def live_run(runs_dir, run_id: str) -> RunFolder:
    """A running run whose recorded process is this one (so it stays live), with two steps."""
    folder = RunFolder.create(runs_dir, run_id)
    folder.initial_state(os.getpid())
    folder.write_state(
        status=Status.RUNNING, max_steps=10, root_pid=os.getpid(), root_start_time=process_start_time(os.getpid())
    )
    emit_steps(folder, range(1, 3))
    return folder


async def test_a_refresh_changes_only_what_changed(runs_dir, monkeypatch):
    make_three_runs(runs_dir)
    live = live_run(runs_dir, "20260104-000000-live01")
    monkeypatch.setattr(runs_screen, "REFRESH_SECONDS", 0.2)
    app = make_app(runs_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == 4)
        ids = row_ids(table)
        assert ids == [r.run_id for r in screen.runs] and ids[0] == live.run_id
        clears = []
        monkeypatch.setattr(table, "clear", lambda *a, **k: clears.append(1))
        await pilot.press("down", "down")  # the cursor on the second-newest finished run
        assert screen._current().run_id == ids[2]
        first = {r.run_id: r for r in screen.runs}
        reads = screen._list.reads
        await wait_until(pilot, lambda: screen._list.reads >= reads + 3)  # three refreshes: the live run each time
        assert cell(table, live.run_id, "step") == "2/10"

        emit_steps(live, range(3, 6))  # the live run moves on: its row follows, the finished ones are not read
        await wait_until(pilot, lambda: cell(table, live.run_id, "step") == "5/10")
        assert all(r is first[r.run_id] for r in screen.runs[1:])

        newer = make_finished_run(runs_dir, "20260105-000000-new001", steps=7, project="newest")
        await wait_until(pilot, lambda: table.row_count == 5)
        assert row_ids(table) == [newer.name, *ids] == [r.run_id for r in screen.runs]
        assert cell(table, newer.name, "project") == "newest" and screen._current().run_id == ids[2]

        shutil.rmtree(runs_dir / ids[1])
        await wait_until(pilot, lambda: table.row_count == 4)
        assert row_ids(table) == [newer.name, ids[0], ids[2], ids[3]]
        assert screen._current().run_id == ids[2]

        await pilot.press("space")
        assert cell(table, ids[2], "mark") == "●" and screen.marked == [ids[2]]
        colour = table.get_cell(ids[2], "status").style
        app.theme = "grpo-light" if app.theme != "grpo-light" else "grpo-dark"
        await wait_until(pilot, lambda: table.get_cell(ids[2], "status").style != colour)  # statuses recoloured
        assert clears == []


def write_summarised_runs(runs_dir, count: int) -> list[str]:
    """``count`` completed runs as ``record_end`` leaves them, written directly: a state.json with a summary."""
    runs_dir.mkdir(parents=True)
    ids = []
    for i in range(count):
        run_id = f"20250101-{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}-000-{i:06x}"
        started = BASE_TIME + i * 60
        ended = started + 30.0
        summary = {
            "ended": ended,
            "events_size": 0,
            "step": i % 40 + 1,
            "reward": 0.5,
            "last_event_time": None,
            "total": 40,
            "project": f"p{i % 7}",
            "model": "org/m",
            "warnings": 0,
            "last_warning": None,
            "crash": None,
            "duration": 30.0,
        }
        (runs_dir / run_id).mkdir(mode=0o700)
        (runs_dir / run_id / "state.json").write_text(
            json.dumps(
                {
                    "format_version": FORMAT_VERSION,
                    "run_id": run_id,
                    "status": "completed",
                    "started": started,
                    "ended": ended,
                    "max_steps": 40,
                    "last_step": i % 40 + 1,
                    "exit_reason": None,
                    "summary": summary,
                }
            )
        )
        ids.append(run_id)
    return ids[::-1]


async def test_thousands_of_runs_paint_a_screenful_first_then_fill_in(tmp_path, monkeypatch):
    runs_dir = tmp_path / "runs"
    count = runs_table.FIRST_ROWS + 2 * runs_table.BATCH_ROWS + 17
    ids = write_summarised_runs(runs_dir, count)
    first_shown = []
    show = RunsTable.show

    def recorded(table, *args):
        show(table, *args)
        first_shown.append(table.row_count)

    monkeypatch.setattr(RunsTable, "show", recorded)
    app = make_app(runs_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == count)
        assert first_shown[0] == runs_table.FIRST_ROWS
        assert row_ids(table) == ids == [r.run_id for r in screen.runs]
        assert f"({count})" in str(screen.query_one("#title").render())
        assert table.columns["project"].content_width == len("project")
        assert cell(table, ids[-1], "step") == "1/40"


async def test_the_list_is_not_read_under_a_monitor_and_is_read_on_return(tmp_path, monkeypatch):
    monkeypatch.setattr(runs_screen, "REFRESH_SECONDS", 0.2)
    make_finished_run(tmp_path, run_id="20260101-000000-first0")
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        await wait_until(pilot, lambda: len(screen.runs) == 1)
        reads = []
        original = screen._list.refresh
        monkeypatch.setattr(screen._list, "refresh", lambda *a, **k: reads.append(1) or original(*a, **k))
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.screen is not screen)
        await pilot.pause(0.3)
        reads.clear()
        make_finished_run(tmp_path, run_id="20260101-000001-second")
        await pilot.pause(1.0)  # not a wait: five refresh periods, in which nothing may be read
        assert reads == [] and len(screen.runs) == 1, "a hidden runs screen does not read the runs dir"
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is screen and len(screen.runs) == 2, timeout=5)
        await wait_until(pilot, lambda: len(reads) >= 2, what="two reads of the runs dir, on its period")
        assert len(reads) >= 2, "shown again, it reads the runs dir on its period"


async def test_a_run_with_skipped_lines_says_so_in_its_row(runs_dir, monkeypatch):
    monkeypatch.setattr(runs_screen, "REFRESH_SECONDS", 0.2)
    live = live_run(runs_dir, "20260104-000000-live01")
    make_finished_run(runs_dir, run_id="20260101-000000-clean0")
    app = make_app(runs_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == 2)
        assert "skipped" not in cell(table, live.run_id, "warnings")
        with open(live.events_file, "a") as events:  # a bare number, then a metrics event whose step is text
            events.write('1\n{"type": "metrics", "step": "x", "values": {}}\n')
        await wait_until(pilot, lambda: "skipped" in cell(table, live.run_id, "warnings"), timeout=10)
        assert cell(table, live.run_id, "warnings") == "0 · 2 lines skipped"
        assert cell(table, "20260101-000000-clean0", "warnings").endswith(")")  # its warnings, and nothing skipped
