"""Untrusted text through every display path of the app: no crash, no markup, no link, no escape on screen.

A property test puts hostile text (tests/hostile_text.py) into the real widgets the monitor and the runs
screen are built from, all on screen at once, with notifications and a confirm dialog, and reads back what
the compositor would send to the terminal. A second test opens the real app on a run folder made of such
text: the runs screen, the monitor's tabs, and the compare screen.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from textual.app import App, ComposeResult
from textual.containers import Vertical

from grpo_tui.app import make_app
from grpo_tui.screens.compare import CompareScreen
from grpo_tui.screens.confirm import ConfirmScreen
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.services.machine.gpus import GPU
from grpo_tui.theming import series_variables
from grpo_tui.widgets.completions import CompletionsTable
from grpo_tui.widgets.gpu_panel import GpuPanel
from grpo_tui.widgets.health_panel import CriticalBanner, HealthPanel
from grpo_tui.widgets.log_view import LogView
from grpo_tui.widgets.metric_chart import MetricChart
from grpo_tui.widgets.run_header import RunHeader
from grpo_tui.widgets.runs_table import RunsTable
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import HealthWarning, Metrics, RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status

from ..hostile_text import assert_no_control, hostile, hostile_name, hostile_run_info
from .conftest import screen_text, wait_until


class Harness(App):
    CSS = "Vertical > * { height: 5; } LogView { height: 6; }"

    def compose(self) -> ComposeResult:
        with Vertical():
            yield RunHeader(id="header")
            yield CriticalBanner(id="banner")
            yield CompletionsTable(id="samples")
            yield HealthPanel(id="health")
            yield RunsTable(hosts=True, id="runs")
            yield LogView(id="log")
            yield GpuPanel(id="gpus")
            yield MetricChart("reward", id="chart")


async def show_everywhere(text: str) -> None:
    app = Harness()
    async with app.run_test(size=(160, 60)) as pilot:
        warning = HealthWarning(rule=text, severity=Severity.CRITICAL, step=3, message=text, advice=text)
        app.query_one(RunHeader).show(text, text, text, 1, 2, 3.0, 1.0, 10.0)
        app.query_one(CriticalBanner).show(warning)
        app.query_one(CompletionsTable).set_samples(
            [
                {"step": text, "reward": 0.5, "prompt": text, "completion": text},
                {"step": 2, "reward": text, "prompt": text, "completion": text},
            ]
        )
        app.query_one(HealthPanel).set_warnings([warning])
        app.query_one(RunsTable).show([hostile_run_info(text, host=text)], frozenset())
        app.query_one(LogView).add(f"{text}\n\x1b[1mbold\x1b[0m {text}\n")
        app.query_one(GpuPanel).show(
            [GPU(index=0, name=text, memory_total=1 << 30, memory_used=0, utilization=5)], where=f"host {text}"
        )
        chart = app.query_one(MetricChart)
        chart.title = text
        chart._retitle(text)
        app.notify(text, title=text, severity="error")
        await pilot.pause()
        assert_no_control(screen_text(app), "monitor and runs widgets")
        app.push_screen(ConfirmScreen(f"Stop run {text}?", text))
        await pilot.pause()
        assert_no_control(screen_text(app), "confirm dialog")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile)
def test_hostile_text_in_every_widget_is_shown_literally(text):
    asyncio.run(show_everywhere(text))


def hostile_run(runs_dir: Path, run_id: str, text: str) -> RunFolder:
    folder = RunFolder.create(runs_dir, run_id)
    RunConfig(model=f"org/{text}", rl_env_module="env.py", rl_env_class="Env", project_name=text, max_steps=4).save(
        folder.config_file
    )
    folder.initial_state(1)
    folder.write_state(status=Status.FAILED, ended=time.time(), last_step=2, exit_reason=text)
    with EventWriter(folder.events_file) as events:
        events.write(RunStarted(run_id=run_id, pid=1, model=text, project_name=text, max_steps=4))
        for step in (1, 2):
            events.write(Metrics(step=step, values={"reward": 0.1 * step, "kl": 0.01, text: 1.0}))
        events.write(HealthWarning(rule="reward_plateau", severity=Severity.WARN, step=2, message=text, advice=text))
    with open(folder.path / "samples.jsonl", "w", encoding="utf-8") as fh:
        for step in (1, 2):
            fh.write(json.dumps({"step": step, "reward": 0.5, "prompt": text, "completion": text}) + "\n")
    folder.log_file.write_bytes(f"{text}\n\x1b]52;c;aGVsbG8=\x07 log line {text}\n".encode())
    return folder


async def test_the_app_on_a_run_folder_made_of_hostile_text(runs_dir):
    text = "<s>[INST] [/] [link=https://evil]x[/link] \x1b]52;c;aGk=\x07 \x1b[2J \x9b1m [bold]b[/bold] [/INST]"
    first = hostile_run(runs_dir, "20260101-000000-a[b]", text)
    second = hostile_run(runs_dir, "20260101-000001-\x1b[31m[x]", text)
    app = make_app(runs_dir, hosts={})
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: "20260101-000000-a[b]" in screen_text(app))
        assert "\\x1b" not in screen_text(app) and "␛[31m[x]" in screen_text(app)
        assert_no_control(screen_text(app), "runs screen")
        app.open_monitor(first.path)
        await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen.last_sample is not None)
        drawn = {  # what each tab shows once drawn
            "completions": lambda: "[/]" in screen_text(app) and "[INST]" in screen_text(app),
            "log": lambda: "log line" in screen_text(app),
        }
        for tab in ("warnings", "completions", "log", "charts"):
            app.screen.action_tab(tab)
            await pilot.pause(0.3)  # not a wait: each tab is drawn once before it is read
            await wait_until(pilot, drawn.get(tab, lambda: True), what=f"the {tab} tab drawn")
            shown = screen_text(app)
            assert_no_control(shown, f"monitor tab {tab}")
            if tab == "completions":
                assert "[/]" in shown and "[INST]" in shown
            if tab == "log":
                assert "log line" in shown and "␛" not in shown.split("log line")[0].rsplit("\n", 1)[-1][-3:]
        app.pop_screen()
        app.push_screen(CompareScreen([first.path, second.path]))
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.runs)
        await pilot.pause(0.3)
        assert_no_control(screen_text(app), "compare screen")


class CompareHarness(App):
    def __init__(self, paths: list[Path]):
        super().__init__()
        self.paths = paths

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return {**super().get_theme_variable_defaults(), **series_variables()}

    def on_mount(self) -> None:
        self.push_screen(CompareScreen(self.paths))


async def compare_runs(paths: list[Path]) -> None:
    app = CompareHarness(paths)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.runs)
        await pilot.pause(0.2)
        assert_no_control(screen_text(app), "compare screen")


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(hostile_name, hostile)
def test_the_compare_screen_shows_hostile_run_names_literally(tmp_path_factory, name, text):
    runs_dir = tmp_path_factory.mktemp("runs")
    paths = [hostile_run(runs_dir, f"a-{name}", text).path, hostile_run(runs_dir, f"b-{name}", text).path]
    asyncio.run(compare_runs(paths))
