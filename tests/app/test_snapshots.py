"""Snapshot tests: what the app's screens look like, pixel for pixel, on fixed run folders.

Each screen is rendered headless at 80x24 and 120x40 with the grpo-dark theme and no animation, from run
folders written by ``tests/run_fixtures.py`` (fixed values, fixed times, final statuses), and compared
with the SVG stored in ``tests/app/__snapshots__/test_snapshots/``. A difference fails the test and writes an
HTML report (snapshot_report.html) that shows both pictures side by side.

After an intended change to a screen, look at the report, then regenerate and review the new SVGs:

    .venv/bin/python -m pytest -n 0 tests/app/test_snapshots.py --snapshot-update

The runs screen shows its runs dir in its title, so those tests build their runs under a fixed path
(``/tmp/grpo-tui-snapshots/<test>``, wiped first, behind a lock so parallel sessions do not collide);
the other screens show no path and use pytest's tmp_path.
"""

from __future__ import annotations

import fcntl
import json
import shutil
from pathlib import Path

import pytest
from textual.widgets import DataTable

from grpo_tui.app import make_app

from ..run_fixtures import make_finished_run, make_three_runs
from .conftest import wait_until as wait_for_state

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
SNAPSHOT_ROOT = Path("/tmp/grpo-tui-snapshots")
THEME = "grpo-dark"
FAKE_GPUS = [{"index": 0, "name": "Fake H100", "memory_total": 80 << 30, "memory_used": 12 << 30, "utilization": 37}]


@pytest.fixture(autouse=True)
def fixed_environment(monkeypatch):
    """Nothing from the machine or the user's shell reaches the screen: GPUs, theme, runs dir."""
    monkeypatch.setenv("GRPO_TUI_FAKE_GPUS", json.dumps(FAKE_GPUS))
    for name in ("GRPO_TUI_THEME", "GRPO_TUI_RUNS_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fixed_runs_dir(request):
    """An empty runs dir at a path that is the same on every machine (the runs screen shows it)."""
    SNAPSHOT_ROOT.mkdir(parents=True, exist_ok=True)
    with open(SNAPSHOT_ROOT / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = SNAPSHOT_ROOT / request.node.originalname.removeprefix("test_").replace("_", "-")
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir()
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)


def app_for(runs_dir: Path, **kwargs):
    app = make_app(runs_dir, theme=THEME, **kwargs)
    app.animation_level = "none"
    return app


async def wait_until(pilot, predicate, timeout: float = 30.0) -> None:
    """The shared wait, then one more frame: a snapshot is taken of what is drawn."""
    await wait_for_state(pilot, predicate, timeout, "the state to snapshot")
    await pilot.pause()


def runs_listed(count: int):
    """The runs screen lists ``count`` runs and its table has measured them (columns as wide as their cells)."""

    def listed(screen) -> bool:
        if len(getattr(screen, "runs", [])) != count:
            return False
        table = screen.query_one(DataTable)
        widest_id = max(len(run.run_id) for run in screen.runs)
        return table.row_count == count and table.columns["id"].content_width >= widest_id

    async def run_before(pilot) -> None:
        screen = pilot.app.screen
        await wait_until(pilot, lambda: listed(screen))
        # DataTable measures new rows when idle, and a frame drawn before that stays cached with the header-wide
        # columns until the table is next cleared (on a busy machine it is). One more load clears it, and its rows
        # are drawn at the widths already measured.
        shown = screen.runs
        screen.action_refresh()
        await wait_until(pilot, lambda: screen.runs is not shown and listed(screen))

    return run_before


async def monitor_loaded(pilot, status: str = "completed") -> None:
    """The monitor has read the whole run and its reader has stopped (a finished run is read once)."""
    app = pilot.app
    await wait_until(
        pilot,
        lambda: (
            getattr(app.screen, "status", None) == status
            and app.screen.loaded
            and not [w for w in app.workers if w.group == "tail"]
        ),
    )


class TestRunsScreen:
    """The list of runs: one completed, one stopped (KL off), one failed (out of memory)."""

    @pytest.mark.parametrize("size", SIZES)
    def test_three_finished_runs(self, snap_compare, fixed_runs_dir, size):
        make_three_runs(fixed_runs_dir)
        assert snap_compare(app_for(fixed_runs_dir), terminal_size=size, run_before=runs_listed(3))

    @pytest.mark.parametrize("size", SIZES)
    def test_no_runs_yet(self, snap_compare, fixed_runs_dir, size):
        async def run_before(pilot):
            await wait_until(pilot, lambda: "no runs" in str(pilot.app.screen.query_one("#title").render()))

        assert snap_compare(app_for(fixed_runs_dir), terminal_size=size, run_before=run_before)


class TestMonitorScreen:
    """The monitor of a finished 40-step run with a kl_explosion warning and a critical mode_collapse."""

    @pytest.mark.parametrize("size", SIZES)
    def test_charts_tab(self, snap_compare, tmp_path, size):
        run = make_finished_run(tmp_path / "runs")
        app = app_for(tmp_path / "runs", start="watch", watch=run)
        assert snap_compare(app, terminal_size=size, run_before=monitor_loaded)

    @pytest.mark.parametrize("size", SIZES)
    def test_warnings_tab(self, snap_compare, tmp_path, size):
        run = make_finished_run(tmp_path / "runs")
        app = app_for(tmp_path / "runs", start="watch", watch=run)
        assert snap_compare(app, press=["2"], terminal_size=size, run_before=monitor_loaded)

    @pytest.mark.parametrize("size", SIZES)
    def test_kl_not_measured(self, snap_compare, tmp_path, size):
        run = make_finished_run(tmp_path / "runs", kl_coef=0.0, with_warnings=False)
        app = app_for(tmp_path / "runs", start="watch", watch=run)
        assert snap_compare(app, terminal_size=size, run_before=monitor_loaded)


class TestMonitorCharts:
    """The charts of a finished 5,000-step run whose reward has a one-step spike at step 3137.

    A downsampler that keeps every Nth point, or the mean of each bucket, would not show it; the chart
    draws each column's min and max, so the spike is a stroke up to the top of the reward chart."""

    @staticmethod
    def spiky_run(runs_dir: Path) -> Path:
        return make_finished_run(runs_dir, steps=5000, reward_spikes={3137: 3.0})

    @pytest.mark.parametrize("size", SIZES)
    def test_long_run_with_a_spike(self, snap_compare, tmp_path, size):
        app = app_for(tmp_path / "runs", start="watch", watch=self.spiky_run(tmp_path / "runs"))
        assert snap_compare(app, terminal_size=size, run_before=monitor_loaded)

    @pytest.mark.parametrize("size", SIZES)
    def test_zoomed_with_cursor_and_ema(self, snap_compare, tmp_path, size):
        app = app_for(tmp_path / "runs", start="watch", watch=self.spiky_run(tmp_path / "runs"))

        async def run_before(pilot):
            await monitor_loaded(pilot)
            await pilot.press("plus")
            await wait_until(pilot, lambda: pilot.app.screen.charts.request.window == 2000)
            await pilot.press("e", "left_square_bracket", "left_square_bracket", "left_square_bracket")

        assert snap_compare(app, terminal_size=size, run_before=run_before)


class TestCompareScreen:
    """Two runs overlaid on the braille charts, each in its colour, reached as a user does: space on two runs, then c."""

    @pytest.mark.parametrize("size", SIZES)
    def test_compare_two_runs(self, snap_compare, tmp_path, size):
        make_three_runs(tmp_path / "runs")

        async def run_before(pilot):
            await runs_listed(3)(pilot)
            await pilot.press("down", "space", "down", "space", "c")
            await wait_until(
                pilot,
                lambda: (
                    type(pilot.app.screen).__name__ == "CompareScreen"
                    and "comparing" in str(pilot.app.screen.query_one("#legend").render())
                ),
            )

        assert snap_compare(app_for(tmp_path / "runs"), terminal_size=size, run_before=run_before)


class TestLaunchScreen:
    """The new-run form as it opens, with the fake GPU picker."""

    @pytest.mark.parametrize("size", SIZES)
    def test_empty_form(self, snap_compare, fixed_runs_dir, size):
        async def run_before(pilot) -> None:
            from grpo_tui.screens.launch import LaunchScreen

            await wait_until(pilot, lambda: isinstance(pilot.app.screen, LaunchScreen))
            for widget in pilot.app.screen.query("Input, TextArea"):
                widget.cursor_blink = False
            await pilot.pause(0.5)

        assert snap_compare(app_for(fixed_runs_dir, start="launch"), terminal_size=size, run_before=run_before)


def test_every_stored_snapshot_is_a_test_of_this_module():
    """syrupy fails a session on a snapshot no test uses only in one process (under pytest-xdist it skips the
    check), so a picture left behind by a renamed or removed test is caught here."""
    tests = {
        f"{cls.__name__}.{name}[{param.id}]"
        for cls in (v for k, v in globals().items() if k.startswith("Test") and isinstance(v, type))
        for name, fn in vars(cls).items()
        if name.startswith("test_")
        for mark in getattr(fn, "pytestmark", [])
        if mark.name == "parametrize"
        for param in mark.args[1]
    }
    stored = {p.stem for p in (Path(__file__).parent / "__snapshots__" / Path(__file__).stem).glob("*.svg")}
    assert stored == tests, {"stored, no test": sorted(stored - tests), "test, none stored": sorted(tests - stored)}
