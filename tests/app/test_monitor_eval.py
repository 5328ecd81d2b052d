"""The monitor shows the held-out evaluation: the reward chart overlays one eval metric at its steps (``v``
pages through them), the Eval tab sets the baseline, the latest and the best eval side by side, and the
Checkpoints tab lists the ledger with its marks. Metric names come from the run: they show literally."""

from __future__ import annotations

import json

from grpo_tui.app import make_app
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.services.catalog.checkpoints import read_checkpoints
from grpo_tui.widgets.checkpoints_table import CheckpointsTable
from grpo_tui.widgets.eval_panel import EMPTY
from grpo_tui.widgets.metric_chart import POINT, MetricChart
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import Checkpoint, Eval, Metrics
from trainer_core.contract.run.status import Status

from ..run_fixtures import TASK_METRIC, eval_at, make_eval_run, make_finished_run
from .conftest import screen_text, wait_until
from .test_monitor_stream import live_run

MARKUP_NAME = "[red]x[/]"
ESC_NAME = "a\x1b[2Jb"


async def open_monitor(pilot) -> MonitorScreen:
    screen = pilot.app.screen
    assert isinstance(screen, MonitorScreen)
    await wait_until(pilot, lambda: screen.status == Status.COMPLETED and len(screen.evals) == 6, what="the evals")
    return screen


def reward_chart(screen: MonitorScreen) -> MetricChart:
    return screen.query_one("#chart-reward", MetricChart)


def table_rows(screen: MonitorScreen) -> dict[str, list[str]]:
    table = screen.query_one(CheckpointsTable)
    return {str(table.get_row_at(i)[0]): [str(c) for c in table.get_row_at(i)] for i in range(table.row_count)}


def eval_columns(text: str) -> str:
    """The eval panel's column headers (the eval, then its step), as words."""
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if line.split()[-3:] == ["baseline", "latest", "best"]), None)
    if at is None:
        return ""
    return " ".join([*lines[at].split()[-3:], "/", *lines[at + 1].split()[-6:]])


async def test_the_reward_chart_overlays_the_eval_metric_and_pages_through_them(runs_dir):
    path = make_eval_run(runs_dir)
    app = make_app(runs_dir, start="watch", watch=path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_monitor(pilot)
        chart = reward_chart(screen)
        # the run's ranking metric first: its mean at each eval's step, the base model's at step 0
        assert screen.grid.eval_key == TASK_METRIC
        assert chart.points == tuple((s, eval_at(s, 50).value(TASK_METRIC)) for s in (0, 10, 20, 30, 40, 50))
        await wait_until(pilot, lambda: POINT in chart.text, what="the eval points on the reward chart")
        assert f"{POINT} eval {TASK_METRIC} 0.100" in str(chart.border_title)
        assert POINT not in screen.query_one("#chart-kl", MetricChart).text  # the reward chart only

        await pilot.press("v")  # the same metric's pass@4, then the held-out reward and its pass@4, then around
        assert screen.grid.eval_key == f"{TASK_METRIC}/pass@4"
        assert chart.points[2] == (20, 0.9)
        await wait_until(pilot, lambda: f"eval {TASK_METRIC}/pass@4" in str(chart.border_title), what="a new title")
        await pilot.press("v")
        assert screen.grid.eval_key == "reward" and chart.points[-1] == (50, 0.9)
        await wait_until(pilot, lambda: f"{POINT} eval reward 0.900" in screen_text(app), what="the reward overlay")
        await pilot.press("v", "v")
        assert screen.grid.eval_key == TASK_METRIC
        assert "v Eval metric" in screen_text(app)  # in the footer


async def test_the_eval_panel_shows_baseline_latest_and_best(runs_dir):
    path = make_eval_run(runs_dir)
    app = make_app(runs_dir, start="watch", watch=path)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_monitor(pilot)
        await pilot.press("6")
        await pilot.pause(0.2)
        text = screen_text(app)
        assert eval_columns(text) == "baseline latest best / step 0 step 50 step 20"  # best: the task metric's peak
        assert f"best ranked by {TASK_METRIC}" in text
        lines: dict[str, list[str]] = {}  # each row by its metric (the first line that names it)
        for line in text.splitlines():
            if line.strip():
                lines.setdefault(line.split()[0], line.split()[1:])
        assert lines[TASK_METRIC] == ["0.300", "0.100", "0.700"]
        assert lines[f"{TASK_METRIC}/pass@4"] == ["0.500", "0.300", "0.900"]
        assert lines["reward"] == ["0.200", "0.900", "0.480"]  # the reward kept rising: the eval says what it cost
        assert "1.5 s" in text and "16 held-out prompts × 4 generations" in text


async def test_a_run_without_evals_says_where_to_read_about_them(runs_dir):
    path = make_finished_run(runs_dir, steps=20, with_warnings=False)
    app = make_app(runs_dir, start="watch", watch=path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, MonitorScreen)
        await wait_until(pilot, lambda: screen.status == Status.COMPLETED)
        assert not screen.grid.eval_keys and reward_chart(screen).points == ()
        assert "v Eval metric" not in screen_text(app)  # nothing to overlay: no key for it
        await pilot.press("6")
        await wait_until(pilot, lambda: EMPTY in screen_text(app), what="the empty eval panel")
        await pilot.press("7")
        await wait_until(pilot, lambda: "2 checkpoints" in screen_text(app), what="the checkpoints")
        assert set(table_rows(screen)) == {"checkpoint-10", "checkpoint-20"}


async def test_the_checkpoints_tab_lists_the_ledger_with_its_marks(runs_dir):
    path = make_eval_run(runs_dir)
    app = make_app(runs_dir, start="watch", watch=path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_monitor(pilot)
        await pilot.press("7")
        await wait_until(pilot, lambda: len(table_rows(screen)) == 6, what="the ledger's rows")
        rows = table_rows(screen)
        assert list(rows) == [*(f"checkpoint-{s}" for s in (10, 20, 30, 40, 50)), "final"]
        assert rows["checkpoint-20"][-1] == "best" and rows["checkpoint-20"][1:4] == ["20", "0.700", "0.900"]
        assert rows["checkpoint-50"][-1] == "last"
        assert rows["final"][-1] == "final"
        assert rows["checkpoint-10"][-2].endswith(("B", "KiB", "MiB"))  # its size on disk, in words
        assert "engine" not in [str(c.label) for c in screen.query_one(CheckpointsTable).columns.values()]
        text = screen_text(app)
        assert f"best by held-out {TASK_METRIC}" in text


async def test_the_checkpoints_tab_names_the_engine_of_each_checkpoints_eval(runs_dir):
    path = make_eval_run(runs_dir, engine="vllm")
    app = make_app(runs_dir, start="watch", watch=path)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await open_monitor(pilot)
        await pilot.press("7")
        await wait_until(pilot, lambda: len(table_rows(screen)) == 6, what="the ledger's rows")
        table = screen.query_one(CheckpointsTable)
        header = [str(column.label) for column in table.columns.values()]
        assert header[-3:] == ["engine", "size", "marks"], header
        rows = table_rows(screen)
        assert {row[-3] for row in rows.values()} == {"vllm"} and rows["checkpoint-20"][-1] == "best"


def test_a_mirror_without_checkpoints_lists_them_from_the_events(runs_dir):
    path = make_eval_run(runs_dir)
    for folder in (path / "checkpoints").iterdir():  # what a mirror of a remote run holds: no checkpoint
        for file in folder.iterdir():
            file.unlink()
        folder.rmdir()
    listed = read_checkpoints(path, from_events=True)
    assert listed.from_events and listed.metric == TASK_METRIC
    marks = {row.name: row.marks for row in listed.rows}
    assert marks == {
        "checkpoint-10": (),
        "checkpoint-20": ("best",),
        "checkpoint-30": (),
        "checkpoint-40": (),
        "checkpoint-50": ("last",),
        "final": ("final",),
    }
    assert all(row.size is None for row in listed.rows)
    assert next(r for r in listed.rows if r.name == "checkpoint-20").metrics[f"{TASK_METRIC}/pass@4"] == 0.9


async def test_an_eval_arriving_while_the_monitor_is_open_is_shown(tmp_path):
    folder = live_run(tmp_path / "runs")
    app = make_app(tmp_path / "runs", start="watch", watch=folder.path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, MonitorScreen)
        await wait_until(pilot, lambda: screen.view.step == 10, what="the first steps")
        assert not screen.evals
        with EventWriter(folder.events_file) as events:
            events.emit(Eval(step=0, metrics={"acc": {"mean": 0.25, "pass@2": 0.5}}, task_metrics=["acc"], base=True))
            events.emit(Metrics(step=11, values={"reward": 0.5}))
            events.emit(Eval(step=11, metrics={"acc": {"mean": 0.75, "pass@2": 1.0}}, task_metrics=["acc"]))
            events.emit(Checkpoint(step=11, path="checkpoints/checkpoint-11"))
        await wait_until(pilot, lambda: len(screen.evals) == 2, what="the new evals")
        assert screen.grid.eval_keys == ["acc", "acc/pass@2"]
        assert reward_chart(screen).points == ((0, 0.25), (11, 0.75))
        await pilot.press("6")
        await wait_until(pilot, lambda: eval_columns(screen_text(app)).endswith("step 0 step 11 step 11"))


async def test_hostile_metric_names_are_shown_literally(runs_dir):
    path = make_eval_run(runs_dir)
    hostile = Eval(
        step=50,
        metrics={MARKUP_NAME: {"mean": 0.5, "pass@4": 0.75}, ESC_NAME: {"mean": 0.25}},
        task_metrics=[MARKUP_NAME],
        prompts=4,
        generations=4,
        seconds=2.0,
    )
    with open(path / "events.jsonl", "a") as fh:  # the latest eval of step 50: the final checkpoint's metrics
        fh.write(json.dumps(hostile.to_record()) + "\n")
    app = make_app(runs_dir, start="watch", watch=path)
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, MonitorScreen)
        await wait_until(pilot, lambda: screen.status == Status.COMPLETED and MARKUP_NAME in screen.eval_names)
        shown_esc = "a␛[2Jb"
        while screen.grid.eval_key != MARKUP_NAME:
            await pilot.press("v")
        await wait_until(pilot, lambda: f"eval {MARKUP_NAME} 0.500" in screen_text(app), what="the chart title")
        await pilot.press("6")
        await wait_until(pilot, lambda: MARKUP_NAME in screen_text(app), what="the eval panel")
        text = screen_text(app)
        assert f"{MARKUP_NAME}/pass@4" in text and shown_esc in text
        await pilot.press("7")
        await wait_until(pilot, lambda: table_rows(screen).get("final") is not None, what="the checkpoints")
        await wait_until(pilot, lambda: shown_esc in screen_text(app), what="the hostile column")
        text = screen_text(app)
        assert MARKUP_NAME in text and "\x1b" not in text
