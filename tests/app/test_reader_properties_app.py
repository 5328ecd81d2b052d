"""The monitor under Pilot on runs whose files hold anything: it never crashes, shows every valid step and
sample, and says once per file how many lines it skipped and where. The issue's repros first (a ``1`` line in
samples.jsonl, ``"step": "x"`` in a warning and in a metrics event), then the property tests' lines."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from grpo_tui.app import make_app
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.widgets.completions import CompletionsTable
from tests.helpers import ROOT, scaled, wait_until
from tests.run_fixtures import make_finished_run
from tests.unit.test_reader_properties import event_files, expected_steps, metrics_line
from trainer_core.contract.run.events import HealthWarning
from trainer_core.contract.run.severity import Severity

STEPS = 12
GOOD_SAMPLE = {"step": STEPS, "prompt": "p", "completion": "the last good sample", "reward": 1.0}


def repro_run(runs_dir: Path) -> Path:
    run = make_finished_run(runs_dir, "20260101-000000-b4d11e", steps=STEPS, with_warnings=False)
    warning = HealthWarning("reward_plateau", Severity.WARN, 3, "flat", "check").to_record()
    with open(run / "events.jsonl", "a") as fh:
        fh.write(json.dumps({**warning, "step": "x"}) + "\n")
        fh.write(json.dumps({"type": "metrics", "time": 2e9, "step": "x", "reward": 0.5}) + "\n")
        fh.write(metrics_line(STEPS + 1).decode() + "\n")  # a valid step after them, in the same batch
    with open(run / "samples.jsonl", "a") as fh:
        fh.write("1\n" + json.dumps(GOOD_SAMPLE) + "\n")
    return run


def notices(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_the_issues_repros_under_pilot(tmp_path):
    run = repro_run(tmp_path)
    app = make_app(tmp_path, hosts={})
    async with app.run_test(size=(140, 40)) as pilot:
        app.open_monitor(run)
        await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen.view.step == STEPS + 1)
        screen = app.screen
        assert isinstance(screen, MonitorScreen)
        await wait_until(pilot, lambda: screen.last_sample == GOOD_SAMPLE, what="the last good sample")
        assert screen.query_one("#samples", CompletionsTable).row_count >= 1
        assert not [w for w in screen.warnings if not isinstance(w.step, int)]  # the bad warning is not charted
        for tab in ("warnings", "completions", "charts"):
            screen.action_tab(tab)
            await pilot.pause(0.2)  # not a wait: each tab is drawn once, and none may crash
        shown = notices(app)
        lines = len((run / "events.jsonl").read_text().splitlines())
        assert [n for n in shown if "events.jsonl" in n] == [
            f"2 lines of events.jsonl skipped, the rest shown; first: events.jsonl line {lines - 2}: "
            "warning: step must be a whole number, 0 or more; got 'x'"
        ]
        samples = (run / "samples.jsonl").read_bytes()
        assert [n for n in shown if "samples.jsonl" in n] == [
            "1 line of samples.jsonl skipped, the rest shown; first: samples.jsonl at byte "
            f"{samples.rindex(b'1' + bytes([10]))}: a JSON int, not an object"
        ]
    assert app.return_code in (None, 0)


# the real `grpo-tui watch RUN`, headless, that quits once the monitor shows the last good sample
WATCH = textwrap.dedent(
    """
    import sys
    from textual.app import App
    import grpo_tui.cli.watch as watch
    from grpo_tui.cli import main
    from tests.helpers import wait_until

    def shown(pilot):
        screen = pilot.app.screen
        return getattr(screen, "last_sample", None) and screen.last_sample.get("completion") == sys.argv[-1]

    async def quit_when_shown(pilot):
        try:
            await wait_until(pilot, lambda: shown(pilot), 60, interval=0.1, what="the last good sample")
        except AssertionError as exc:
            print(exc, file=sys.stderr)
            pilot.app.exit(return_code=3)
            return
        await pilot.press("q")
        await pilot.press("q")

    run = App.run
    App.run = lambda self, **kw: run(self, headless=True, auto_pilot=quit_when_shown, **kw)
    watch.interactive = lambda: True
    sys.exit(main(sys.argv[1:-1]))
    """
)


def test_watch_on_a_run_with_a_1_line_in_samples_shows_it_and_exits_0(tmp_path):
    run = repro_run(tmp_path / "runs")
    script = tmp_path / "watch.py"
    script.write_text(WATCH)
    proc = subprocess.run(
        [sys.executable, str(script), "watch", run.name, "--runs-dir", str(run.parent), GOOD_SAMPLE["completion"]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONPATH": str(ROOT)},
        timeout=scaled(120),
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "crashed" not in proc.stderr
    assert not (tmp_path / "state" / "grpo-tui" / "crashes").exists()


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(event_files())
def test_the_monitor_shows_every_valid_step_of_any_events_file(tmp_path_factory, made):
    lines, _ = made
    runs = tmp_path_factory.mktemp("runs")
    run = make_finished_run(runs, "20260101-000000-9a9a9a", steps=2, with_warnings=False)
    events = run / "events.jsonl"
    events.write_bytes(events.read_bytes() + b"\n".join(lines) + b"\n" + b'{"type": "metr')  # and a torn line
    (run / "samples.jsonl").write_bytes(b"\n".join(lines) + b"\n" + json.dumps(GOOD_SAMPLE).encode() + b"\n")
    want, _ = expected_steps(events.read_bytes().split(b"\n")[:-1])

    async def drive() -> None:
        app = make_app(runs, hosts={})
        async with app.run_test(size=(120, 36)) as pilot:
            app.open_monitor(run)
            await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen.view.step == want[-1])
            screen = app.screen
            assert isinstance(screen, MonitorScreen) and screen.view.metrics_read == len(want)
            await wait_until(pilot, lambda: screen.last_sample == GOOD_SAMPLE, what="the good sample")
            for tab in ("warnings", "completions", "log", "charts"):
                screen.action_tab(tab)
                await pilot.pause(0.1)  # not a wait: each tab is drawn once, and none may crash
        assert app.return_code in (None, 0)

    asyncio.run(drive())


async def test_the_runs_list_and_the_monitor_on_a_run_with_every_file_broken(tmp_path):
    """Each file broken as tests/unit/test_bad_files_cli.py breaks it, all in one run: the runs screen lists it
    beside a good one, and its monitor opens and shows its steps."""
    from textual.widgets import DataTable

    from grpo_tui.screens.runs import RunsScreen
    from tests.unit.test_bad_files_cli import BROKEN

    good = make_finished_run(tmp_path, "20260101-000000-900d00", steps=5, with_warnings=False)
    bad = make_finished_run(tmp_path, "20260101-000001-bad000", steps=STEPS, with_warnings=False)
    for name, (data, how) in BROKEN.items():
        path = bad / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab" if how == "append" else "wb") as fh:
            fh.write(data)
    app = make_app(tmp_path, hosts={})
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == 2, what="both runs listed")
        assert {r.run_id for r in screen.runs} == {good.name, bad.name}
        app.open_monitor(bad)
        await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen.view.step == STEPS)
        for tab in ("warnings", "completions", "log", "checkpoints", "charts"):
            app.screen.action_tab(tab)
            await pilot.pause(0.1)  # not a wait: each tab is drawn once, and none may crash
        assert any("of events.jsonl skipped" in n for n in notices(app))
    assert app.return_code in (None, 0)
