"""The Textual app under Pilot, on real runs of the tiny model: reattach, warnings, stop, runs list."""

from __future__ import annotations

import json

from grpo_tui.api import launch
from grpo_tui.app import make_app
from grpo_tui.screens.confirm import ConfirmScreen
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.screens.runs import RunsScreen
from grpo_tui.widgets.health_panel import CriticalBanner, HealthPanel
from grpo_tui.widgets.metric_chart import MetricChart
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import EventWriter, read_events
from trainer_core.contract.run.events import EventType, HealthWarning, Metrics, RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status
from trainer_core.training.runner import train

from ..helpers import EXAMPLES, wait_for
from .conftest import header_text, wait_until


def pattern_config(tiny_model, **overrides) -> RunConfig:
    settings = dict(rl_num_generations=4, batch_size=8, rl_max_new_tokens=12, lr=2e-3, save_steps=1000, max_steps=6)
    return RunConfig(
        model=tiny_model,
        rl_env_module=str(EXAMPLES / "pattern_env.py"),
        rl_env_class="PatternEnv",
        **{**settings, **overrides},
    )


async def test_reattaching_to_a_finished_run_shows_every_step(tiny_model, runs_dir):
    result = train(pattern_config(tiny_model, max_steps=6), runs_dir=runs_dir)
    app = make_app(runs_dir, start="watch", watch=result.path)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, MonitorScreen)
        await wait_until(pilot, lambda: screen.status == "completed" and len(screen.charts.get("reward", ())) == 6)
        assert list(screen.charts["reward"].steps) == [1, 2, 3, 4, 5, 6] and screen.view.metrics_read == 6
        assert "COMPLETED" in header_text(screen) and "step 6/6" in header_text(screen)
        chart = screen.query_one("#chart-kl", MetricChart)
        assert chart.has_data and chart.border_title.startswith("KL")
        assert any(0x2800 < ord(ch) <= 0x28FF for ch in chart.text), "the KL chart draws braille dots"


async def test_a_kl_explosion_run_shows_its_warning_and_advice(tiny_model, runs_dir):
    result = train(pattern_config(tiny_model, lr=1e-1, max_steps=12), runs_dir=runs_dir)
    app = make_app(runs_dir, start="watch", watch=result.path)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.query_one(HealthPanel).shown > 0)
        await pilot.press("2")

        def warnings_shown() -> str:
            return " ".join(str(s.render()) for s in screen.query_one(HealthPanel).query(".warning"))

        await wait_until(pilot, lambda: "kl_explosion" in warnings_shown(), what="the warnings tab")
        shown = warnings_shown()
        assert "kl_explosion" in shown and "Lower --lr" in shown
        markers = screen._markers()
        assert markers and all(1 <= m <= 12 for m in markers)
        critical = [w for w in screen._all_warnings() if w.severity is Severity.CRITICAL]
        assert screen.query_one(CriticalBanner).has_class("-active") == bool(critical)


async def test_kl_not_measured_is_said_instead_of_an_empty_chart(tiny_model, runs_dir):
    result = train(pattern_config(tiny_model, rl_kl_coef=0.0, max_steps=2), runs_dir=runs_dir)
    app = make_app(runs_dir, start="watch", watch=result.path)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.status == "completed")
        chart = screen.query_one("#chart-kl", MetricChart)
        assert "KL not measured" in chart.text


async def test_stopping_a_live_run_from_the_monitor(tiny_model, runs_dir):
    handle = launch(pattern_config(tiny_model, max_steps=2000), runs_dir)
    try:
        app = make_app(runs_dir, start="watch", watch=handle.path)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            await wait_until(pilot, lambda: screen.view.metrics_read >= 1, timeout=120)
            await wait_until(pilot, lambda: screen.status == "running")
            await pilot.press("s")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the stop's confirmation")
            await pilot.press("y")
            await wait_until(pilot, lambda: screen.status == "stopped", timeout=120)
            assert "STOPPED" in header_text(screen)
        assert handle.status() is Status.STOPPED
        assert handle.folder.checkpoints()
        assert "grpo-tui stop (the app)" in handle.folder.read_state()["exit_reason"]  # who asked is recorded
    finally:
        handle.stop(force=True, timeout=1)


async def test_runs_screen_lists_opens_and_compares(tiny_model, runs_dir):
    first = train(pattern_config(tiny_model, max_steps=2), runs_dir=runs_dir)
    second = train(pattern_config(tiny_model, max_steps=3, lr=1e-2), runs_dir=runs_dir)
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        await wait_until(pilot, lambda: len(screen.runs) == 2)
        assert [r.run_id for r in screen.runs] == [second.run_id, first.run_id]
        await pilot.press("space", "down", "space", "c")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "CompareScreen")
        await pilot.press("escape")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen))
        assert app.screen.folder.run_id == first.run_id


async def test_themes_are_registered_and_selectable(runs_dir):
    app = make_app(runs_dir, theme="grpo-light")
    async with app.run_test() as pilot:
        assert app.theme == "grpo-light"
        assert {"grpo-dark", "grpo-light", "grpo-high-contrast"} <= set(app.available_themes)
        app.theme = "grpo-high-contrast"
        await pilot.pause()
        assert app.current_theme.background == "#000000"


async def test_resuming_a_stopped_run_from_the_runs_screen(tiny_model, runs_dir):
    handle = launch(pattern_config(tiny_model, max_steps=2000), runs_dir)
    try:
        wait_for(lambda: handle.events(EventType.METRICS), timeout=120)
        assert handle.stop(timeout=120).graceful
        stopped_at = handle.events(EventType.RUN_FINISHED)[-1].step
        app = make_app(runs_dir)
        async with app.run_test(size=(120, 30)) as pilot:
            screen = app.screen
            await wait_until(pilot, lambda: len(screen.runs) == 1 and screen.runs[0].status == "stopped")
            await pilot.press("u")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the resume's confirmation")
            await pilot.press("y")
            await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen), timeout=30)
            monitor = app.screen
            # a resumed trainer starts as a new one does (torch, the model, the checkpoint): slow beside another test
            await wait_until(
                pilot,
                lambda: monitor.view.metrics_read > stopped_at,
                timeout=240,
                what=f"a step after {stopped_at} on the resumed run's monitor",
                show=lambda: handle.folder.log_file.read_text(errors="replace")[-3000:],
            )
        steps = [e.step for e in handle.events(EventType.METRICS)]
        assert steps[: stopped_at + 1] == list(range(1, stopped_at + 2))
    finally:
        handle.stop(force=True, timeout=1)


def test_run_stream_series_stay_right_when_keys_come_and_go(tmp_path):
    from grpo_tui.services.stream.folded import RunStream

    folder = RunFolder.create(tmp_path)
    with EventWriter(folder.events_file) as w:
        for step in range(1, 7):
            extra = {"kl": 0.1 * step} if step not in (3, 4) else {}
            loss = None if step == 5 else 0.5
            w.emit(Metrics(step=step, values={"reward": step / 10, "loss": loss, **extra}))
        w.emit(HealthWarning("kl_explosion", Severity.WARN, 6, "KL is rising"))
    stream = RunStream(folder)
    stream.poll()
    s = stream.series
    assert list(s["reward"].steps) == [1, 2, 3, 4, 5, 6] and len(s["reward"]) == 6
    assert list(s["kl"].steps) == [1, 2, 5, 6] and [round(v, 2) for v in s["kl"].values] == [0.1, 0.2, 0.5, 0.6]
    assert list(s["loss"].steps) == [1, 2, 3, 4, 6]
    assert s["reward"].steps is stream.steps and s["kl"].steps is not stream.steps
    assert [w.rule for w in stream.warnings] == ["kl_explosion"]
    with EventWriter(folder.events_file) as w:
        w.emit(Metrics(step=7, values={"reward": 0.7, "loss": 0.4, "kl": 0.7}))
    stream.poll()
    assert list(s["reward"].steps)[-1] == 7 and list(s["kl"].steps) == [1, 2, 5, 6, 7] and len(stream.times) == 7


async def test_the_command_palette_offers_the_screens_keys(runs_dir):
    from ..run_fixtures import make_finished_run

    path = make_finished_run(runs_dir)
    app = make_app(runs_dir, start="watch", watch=path)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        titles = [c.title for c in app.get_system_commands(screen)]
        assert {"Stop", "Force stop", "Next metric", "Theme", "Quit"} <= set(titles)
        command = next(c for c in app.get_system_commands(screen) if c.title == "Next metric")
        before = screen.extra_index
        command.callback()
        await wait_until(pilot, lambda: screen.extra_index != before, what="the next metric")
        assert screen.extra_index == before + 1


async def test_a_lost_runs_monitor_shows_how_long_it_ran_not_the_time_since(runs_dir):
    from ..run_fixtures import make_finished_run

    folder = RunFolder(make_finished_run(runs_dir, steps=40, status=Status.COMPLETED))
    events = read_events(folder.events_file)
    # its processes vanished mid-run: no end recorded, the state still says running
    folder.events_file.unlink()
    with EventWriter(folder.events_file) as w:
        for event in events:
            if isinstance(event, (RunStarted, Metrics)):
                w.emit(event)  # with the time it was written at
    state = json.loads(folder.state_file.read_text())
    state.update(status="running", ended=None, exit_reason=None, updated=state["started"] + 5)
    folder.state_file.write_text(json.dumps(state))
    app = make_app(runs_dir, start="watch", watch=folder.path)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.status == "lost" and "step 40/40" in header_text(screen))
        assert "LOST" in header_text(screen)
        assert "0:00:20" in header_text(screen)  # to its last metrics event (step 40, 0.5 s a step)
