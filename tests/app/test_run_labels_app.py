"""A run's name and tags in the app (issue 44, points 12 and 13): the form takes them (refusing a bad tag under its
field), the runs list shows them beside the id and filters
by them (``/``; escape clears), the monitor's header names the run, and Compare's legend names each run and lists
the settings that differ between the runs' config.yaml files, all as literal text."""

from __future__ import annotations

import shlex

from textual.widgets import DataTable, Input

from grpo_tui.app import make_app
from grpo_tui.screens.compare import CompareScreen
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.screens.runs import RunsScreen

from ..run_fixtures import make_finished_run
from .conftest import header_text, wait_until
from .test_launch_screen import PATTERN, fill, launch_screen, no_gpus, note, settle
from .test_runs_screen import cell, row_ids

SIZE = (120, 40)
__all__ = ["no_gpus"]  # a fixture
A, B, C = "20260101-000000-aaaaaa", "20260102-000000-bbbbbb", "20260103-000000-cccccc"


def three_runs(runs_dir) -> None:
    make_finished_run(runs_dir, A, steps=6, name="baseline [b]", tags=("sweep", "lr:2e-3"), with_warnings=False)
    make_finished_run(
        runs_dir, B, steps=6, name="higher lr", tags=("sweep", "lr:1e-2"), lr=1e-2, project="other", with_warnings=False
    )
    make_finished_run(runs_dir, C, steps=6, with_warnings=False)


async def test_the_runs_list_shows_and_filters_names_and_tags(runs_dir):
    three_runs(runs_dir)
    app = make_app(runs_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == 3)
        assert cell(table, B, "name") == "higher lr #sweep #lr:1e-2"  # literal, and cut to fit 80 columns:
        assert cell(table, A, "name") == "baseline [b] #sweep #lr:2…"
        assert cell(table, C, "name") == ""

        await pilot.press("slash")
        box = screen.query_one("#filter", Input)
        await wait_until(pilot, lambda: box.has_focus and box.display)
        await pilot.press(*"sweep")
        await wait_until(pilot, lambda: row_ids(table) == [B, A], show=lambda: row_ids(table))
        await pilot.press(*" 1e-2")  # every word must match: the tag lr:1e-2
        await wait_until(pilot, lambda: row_ids(table) == [B], show=lambda: row_ids(table))
        await pilot.press(*["backspace"] * 11, *"HIGHER")  # a name, any case
        await wait_until(pilot, lambda: row_ids(table) == [B], show=lambda: row_ids(table))
        box.value = "other"  # the project
        await wait_until(pilot, lambda: row_ids(table) == [B], show=lambda: row_ids(table))
        box.value = "202601"  # the ids
        await wait_until(pilot, lambda: row_ids(table) == [C, B, A], show=lambda: row_ids(table))
        box.value = "cccccc"
        await wait_until(pilot, lambda: row_ids(table) == [C], show=lambda: row_ids(table))

        await pilot.press("escape")
        await wait_until(pilot, lambda: row_ids(table) == [C, B, A] and not box.display and table.has_focus)
        assert box.value == ""


async def test_the_monitor_header_names_the_run(runs_dir):
    three_runs(runs_dir)
    app = make_app(runs_dir)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == 3)
        await pilot.press("down", "down", "enter")  # the oldest: A
        await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen))
        await wait_until(pilot, lambda: "baseline [b] #sweep #lr:2e-3" in header_text(app.screen))
        assert header_text(app.screen).startswith(A)


async def test_compare_names_the_runs_and_lists_the_settings_that_differ(runs_dir):
    three_runs(runs_dir)
    app = make_app(runs_dir)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == 3)
        await pilot.press("down", "space", "down", "space", "c")  # B, then A
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and bool(app.screen.settings))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_until(pilot, lambda: "higher lr" in screen.legend_text)
        assert f"{B}  higher lr #sweep #lr:1e-2" in screen.legend_text
        assert f"{A}  baseline [b] #sweep #lr:2e-3" in screen.legend_text
        lines = screen.settings_text.splitlines()
        assert lines[0] == "settings that differ:"
        assert "  lr  0.01 · 0.002" in lines and "  project_name  other · grpo-run" in lines
        keys = {line.split()[0] for line in lines[1:]}
        assert keys == {"lr", "project_name"}, lines  # the same settings, the name and tags are not listed


async def test_the_form_takes_a_name_tags_and_notes_and_says_what_is_wrong_with_them(runs_dir, no_gpus):
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        form = screen.form
        fill(screen, model="org/model", name="lr sweep [1]", tags="sweep bad/tag", notes="first try", **PATTERN)
        await settle(pilot)
        await pilot.press("ctrl+l")
        await settle(pilot)
        assert "tag 'bad/tag' is not a tag" in form.note("tags")
        assert "cannot launch" in note(screen, "#launch-status")
        assert not runs_dir.exists() or not any(runs_dir.iterdir())

        fill(screen, tags="sweep lr:1e-5")
        await settle(pilot)
        assert form.note("tags") == "" and form.check() == []
        config = form.config()
        assert (config.name, config.tags, config.notes) == ("lr sweep [1]", ["sweep", "lr:1e-5"], "first try")
        argv = shlex.split(screen.preview_text.removeprefix("$ "))
        assert argv[argv.index("--name") + 1] == "lr sweep [1]"
        assert [argv[i + 1] for i, word in enumerate(argv) if word == "--tag"] == ["sweep", "lr:1e-5"]
