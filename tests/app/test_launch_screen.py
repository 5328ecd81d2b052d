"""The launch screen driven as a user would: bad settings refused with the CLI's messages, a real tiny run
started from the form and watched in the monitor, presets, config files, the command preview, GPUs."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from textual.widgets import Input, Select, SelectionList, Static, Switch, TextArea

from grpo_tui.app import make_app
from grpo_tui.cli import build_parser
from grpo_tui.config_flags import config_from_args
from grpo_tui.presets import PRESETS, apply_preset, preset_values
from grpo_tui.screens.confirm import ConfirmScreen
from grpo_tui.screens.launch import NO_GPU_TEXT, LaunchScreen
from grpo_tui.services.machine.gpus import list_gpus
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.process import marked
from trainer_core.contract.run.status import FINAL as FINAL_STATUSES  # the final Status members

from ..helpers import EXAMPLES, wait_until

SIZE = (120, 40)
PATTERN = {"rl_env_module": str(EXAMPLES / "pattern_env.py"), "rl_env_class": "PatternEnv"}


def tiny_pattern_run(tiny_model: str, max_steps: int) -> dict:
    """Form values for a short pattern run of the tiny model."""
    return dict(
        model=tiny_model,
        rl_num_generations="4",
        batch_size="8",
        rl_max_new_tokens="8",
        max_steps=str(max_steps),
        **PATTERN,
    )


async def launch_screen(pilot) -> LaunchScreen:
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, LaunchScreen)
    return screen


async def settle(pilot, seconds: float = 0.35) -> None:
    """Let the as-you-type validation (debounced) and the preview catch up: pending messages handled, no validation
    still scheduled, and what the last one posted handled too, however late a loaded machine runs the timer."""
    await pilot.pause(seconds)
    await pilot.pause()
    form = getattr(pilot.app.screen, "form", None)
    await wait_until(pilot, lambda: getattr(form, "_timer", None) is None, what="the form's debounced validation")
    await pilot.pause()


def run_state(runs_dir: Path) -> str:
    """The state and the log's tail of the runs under ``runs_dir``: what a wait for a run shows when it fails."""
    if not runs_dir.is_dir():
        return f"no {runs_dir}"
    shown = []
    for run in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        log = run / "trainer.log"
        state = (run / "state.json").read_text() if (run / "state.json").exists() else "no state.json"
        shown.append(f"{run.name}: {state}\n{log.read_text(errors='replace')[-3000:] if log.exists() else 'no log'}")
    return "\n".join(shown) or f"no run in {runs_dir}"


@pytest.fixture
def no_gpus(monkeypatch):
    """A machine without GPUs, whatever this one has, so placement and messages do not depend on it."""
    monkeypatch.setenv("GRPO_TUI_FAKE_GPUS", "0")


def fill(screen: LaunchScreen, **values) -> None:
    """Put text into fields as typing would leave it."""
    for name, value in values.items():
        widget = screen.form.widget_for(name)
        if isinstance(widget, TextArea):
            widget.text = value
        else:
            widget.value = value


def note(screen: LaunchScreen, widget_id: str) -> str:
    return str(screen.query_one(widget_id, Static).visual)


async def test_invalid_settings_are_refused_with_the_cli_messages_under_their_fields(runs_dir, no_gpus):
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        form = screen.form

        await pilot.press("ctrl+l")
        await settle(pilot)
        assert "GRPO requires --rl-env-module and --rl-env-class" in form.note("rl_env_module")
        assert form.note("model") == next(str(p) for p in RunConfig().problems() if p.field == "model")
        assert app.focused is form.widget_for("model")

        fill(screen, model="some/model", batch_size="6", **PATTERN)
        await settle(pilot)
        await pilot.press("ctrl+l")
        await settle(pilot)
        expected = RunConfig(model="some/model", batch_size=6, **PATTERN).problems()
        assert [p.field for p in expected] == ["batch_size"]
        assert form.note("batch_size") == str(expected[0])
        assert str(expected[0]) in note(screen, "#info-batch_size").replace("\n", " ")
        assert "divisible by rl_num_generations" in form.note("batch_size")
        assert form.note("rl_env_module") == "" and form.note("model") == ""
        assert app.focused is form.widget_for("batch_size")
        assert "cannot launch" in note(screen, "#launch-status")
        assert not runs_dir.exists() or not any(runs_dir.iterdir())
        assert isinstance(app.screen, LaunchScreen)

        fill(screen, batch_size="8")
        await settle(pilot)
        assert form.note("batch_size") == ""
        assert form.check() == []


async def test_a_config_handed_to_the_screen_shows_its_problems_and_a_failed_launch_says_why(tmp_path, no_gpus):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    config = RunConfig(model="some/model", batch_size=6, rl_env_config={"target": "a"}, **PATTERN)
    app = make_app(blocker / "runs", start="launch", launch_config=config)
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        await settle(pilot)
        assert screen.form.config() == config
        assert "divisible by rl_num_generations" in screen.form.note("batch_size")
        assert screen.form.note("rl_env_config") == "valid JSON object"

        fill(screen, batch_size="8")
        await settle(pilot)
        await pilot.press("ctrl+l")
        await skip_the_gate(pilot)
        await app.workers.wait_for_complete()
        await wait_until(pilot, lambda: not screen.launching, 30, what="the launch to end")
        await settle(pilot, 0.1)
        assert note(screen, "#launch-status").startswith("launch failed: cannot create a run folder in")
        assert isinstance(app.screen, LaunchScreen) and not screen.launching
        assert not screen.query_one("#launch").disabled


async def test_a_light_install_refuses_to_launch_here_naming_the_extra(runs_dir, no_gpus, monkeypatch):
    """Without the trainer (``pip install grpo-tui``), a launch on this machine would fail in its log: the form
    says so at once, with what to install, and nothing is created."""
    from ..unit.test_light_install import lacking

    lacking(monkeypatch, "torch", "trl")
    config = RunConfig(model="some/model", rl_env_config={"target": "a"}, **PATTERN)
    app = make_app(runs_dir, start="launch", launch_config=config)
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        await settle(pilot)
        await pilot.press("ctrl+l")
        await settle(pilot, 0.2)
        assert note(screen, "#launch-status") == (
            "cannot launch here: this install lacks the trainer (no torch, trl): pip install 'grpo-tui[train]', "
            "or pick a host whose grpo-tui has it"
        )
        assert isinstance(app.screen, LaunchScreen) and not screen.launching
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


async def skip_the_gate(pilot, click: bool = False) -> None:
    """Launch deliberately without a reward inspection (the gate's skip, by key or button, confirmed)."""
    from grpo_tui.screens.inspect import InspectScreen

    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, InspectScreen), 30, interval=0.1, what="the inspection gate")
    gate = app.screen
    if click:
        await pilot.click("#skip")
    else:
        await pilot.press("ctrl+k")
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 30, what="the skip's confirmation")
    await pilot.press("y")
    await wait_until(pilot, lambda: gate not in app.screen_stack, 30, what="the gate answered")


async def test_env_config_json_is_checked_while_typing(runs_dir):
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        form = screen.form
        assert form.focus_field("rl_env_config")
        await pilot.pause()
        await pilot.press(*'{"target":')
        await settle(pilot, 0.1)
        text = form.widget_for("rl_env_config").text
        assert text == '{"target":'
        assert form.note("rl_env_config").startswith("rl_env_config must be a JSON object")
        assert screen.query_one("#info-rl_env_config").has_class("-error")

        await pilot.press("space", *'"a"}')
        await settle(pilot, 0.1)
        assert form.note("rl_env_config") == "valid JSON object"
        assert form.config().rl_env_config == {"target": "a"}

        fill(screen, rl_env_config="[1, 2]", health='{"kl_high": ')
        await settle(pilot)
        assert "must be a JSON object" in form.note("rl_env_config")
        assert "health must be a JSON object" in form.note("health")


async def test_a_run_launched_from_the_form_opens_its_monitor_and_trains(runs_dir, tiny_model):
    from grpo_tui.screens.monitor import MonitorScreen

    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        fill(screen, **tiny_pattern_run(tiny_model, max_steps=3))
        await settle(pilot)
        await pilot.click("#launch")
        await skip_the_gate(pilot, click=True)  # the button: its confirm answers inside the screen's own handler

        # the trainer's start alone (torch, the model, the first step) takes most of a minute beside another test
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, MonitorScreen) and len(app.screen.charts.get("reward") or ()) >= 1,
            240,
            interval=0.5,
            what="a reward point on the run's monitor",
            show=lambda: run_state(runs_dir),
        )
        monitor = app.screen
        assert isinstance(monitor, MonitorScreen)
        assert not any(isinstance(s, LaunchScreen) for s in app.screen_stack)
        folder = monitor.folder
        assert folder.path.parent == runs_dir.resolve()
        saved = RunConfig.load(folder.config_file)
        assert (saved.model, saved.max_steps, saved.rl_max_new_tokens) == (tiny_model, 3, 8)

        await wait_until(
            pilot,
            lambda: folder.read_state().get("status") in FINAL_STATUSES,
            240,
            interval=0.5,
            what="the run to end",
            show=lambda: run_state(runs_dir),
        )
        assert folder.read_state().get("status") == "completed", (folder.path / "trainer.log").read_text()[-3000:]
    await wait_until(
        None, lambda: not marked(folder.path), 30, interval=0.5, what="no process left marked with the run"
    )


async def test_presets_fill_only_the_fields_they_name(runs_dir, no_gpus):
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        fill(screen, model="keep/me")
        expected = RunConfig(model="keep/me")
        for name in PRESETS:
            screen.query_one("#preset", Select).value = name
            await settle(pilot, 0.1)
            expected = apply_preset(expected, name)
            assert screen.form.config() == expected, name
            assert note(screen, "#preset-description") == f"applied {name!r}: {PRESETS[name].description}"
            assert screen.query_one("#preset", Select).is_blank()
        # the CPU demo preset (the last) names its model too: the demo's tiny model (test_cpu_demo_preset.py)
        assert expected.model == preset_values("CPU demo")["model"] and expected.project_name == "cpu-demo"
        assert json.loads(screen.form.widget_for("rl_env_config").text) == expected.rl_env_config
        assert expected.rl_env_config["target"] == "a"

        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, LaunchScreen)


async def test_a_config_saved_to_yaml_loads_back_unchanged(runs_dir, no_gpus, tmp_path):
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        path = tmp_path / "saved.yaml"
        fill(
            screen,
            model="org/model",
            lr="5e-7",
            rl_env_config='{"max_turns": 3}',
            health='{"kl_high": 2.5}',
            max_prompt_length="512",
            **PATTERN,
        )
        screen.form.widget_for("peft").value = True
        screen.form.widget_for("rl_loss_type").value = "dapo"
        await settle(pilot)
        shown = screen.form.config()

        screen.query_one("#config-path", Input).value = str(path)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert path.exists() and note(screen, "#file-status") == f"saved {path}"
        assert RunConfig.load(path) == shown

        screen.form.load(RunConfig())
        await pilot.pause()
        assert screen.form.config() == RunConfig()
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert screen.form.config() == shown
        assert shown.lr == 5e-7 and shown.peft and shown.rl_loss_type == "dapo" and shown.health == {"kl_high": 2.5}

        screen.query_one("#config-path", Input).value = str(tmp_path / "missing.yaml")
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert "cannot read config file" in note(screen, "#file-status")
        assert screen.query_one("#file-status").has_class("-error")
        assert screen.form.config() == shown

        screen.query_one("#config-path", Input).value = str(path)
        fill(screen, max_steps="7")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause()
        assert RunConfig.load(path).max_steps == 7


async def test_the_command_preview_is_the_cli_command_for_the_form(runs_dir, no_gpus):
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        fill(screen, model="org/model", rl_env_config='{"target": "b c"}', max_steps="3", **PATTERN)
        screen.query_one("#num-processes", Input).value = "2"
        await settle(pilot)
        preview = screen.preview_text
        assert "--rl-env-class PatternEnv" in preview
        argv = shlex.split(preview.removeprefix("$ "))
        assert argv[:2] == ["grpo-tui", "launch"]
        args = build_parser().parse_args(argv[1:])
        assert config_from_args(args) == screen.form.config()
        assert (args.num_processes, args.gpus, args.runs_dir) == (2, None, str(runs_dir.resolve()))


async def test_gpu_picker_lists_the_gpus_and_sets_the_gpus_flag(runs_dir, monkeypatch):
    monkeypatch.setenv("GRPO_TUI_FAKE_GPUS", "2")
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        picker = screen.query_one("#gpu-list", SelectionList)
        assert picker.option_count == 2
        assert "80 GiB" in str(picker.get_option_at_index(0).prompt)
        assert not screen.query("#no-gpus")
        assert "--gpus" not in screen.preview_text
        picker.deselect(1)
        await settle(pilot)
        assert "--gpus 0 " in screen.preview_text
        picker.deselect(0)
        await settle(pilot)
        assert "Select at least one GPU" in screen.preview_text


async def test_without_gpus_the_picker_says_training_runs_on_the_cpu(runs_dir, monkeypatch):
    monkeypatch.delenv("GRPO_TUI_FAKE_GPUS", raising=False)
    real = list_gpus()
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        if real:
            assert screen.query_one("#gpu-list", SelectionList).option_count == len(real)
            pytest.skip("this machine has NVIDIA GPUs: the no-GPU line cannot show")
        assert note(screen, "#no-gpus") == NO_GPU_TEXT
        assert not screen.query("#gpu-list")


async def test_the_screen_is_usable_at_80x24(runs_dir, no_gpus):
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await launch_screen(pilot)
        body = screen.query_one("#body")
        assert body.virtual_size.height > body.size.height
        assert screen.query_one("#launch").region.bottom <= 24
        fill(screen, health="[]")
        await settle(pilot)
        await pilot.press("ctrl+l")
        await settle(pilot)
        target = screen.form.widget_for("model")
        assert app.focused is target
        assert screen.form.focus_field("health")
        await settle(pilot)
        health = screen.form.widget_for("health")
        assert app.focused is health
        # scrolling to the focused field is animated; give a busy machine time
        await wait_until(
            pilot, lambda: body.region.overlaps(health.region), 30, interval=0.1, what="the field scrolled to"
        )
        assert isinstance(screen.form.widget_for("peft"), Switch)


async def test_the_gate_inspect_read_launch(runs_dir, tiny_model):
    from grpo_tui.screens.inspect import InspectScreen
    from grpo_tui.screens.monitor import MonitorScreen

    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        fill(screen, **tiny_pattern_run(tiny_model, max_steps=2))
        await settle(pilot)
        await pilot.press("ctrl+l")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, InspectScreen) and app.screen.finished,
            240,
            interval=0.3,
            what="the inspection to finish",
        )
        gate = app.screen
        assert isinstance(gate, InspectScreen) and gate.finished
        import io

        from rich.console import Console

        console = Console(file=io.StringIO(), width=120)
        console.print(gate.report_view)
        body = console.file.getvalue()
        assert "score distribution" in body and "samples (first" in body
        assert not gate.query_one("#launch").disabled
        inspection_id = gate.inspection.id
        await pilot.press("ctrl+l")
        await wait_until(
            pilot, lambda: isinstance(app.screen, MonitorScreen), 120, interval=0.3, what="the run's monitor"
        )
        folder = app.screen.folder
        assert RunConfig.load(folder.config_file).inspection == inspection_id
        assert (folder.path / "inspection.jsonl").read_text() == (gate.inspection.path / "inspection.jsonl").read_text()
        await wait_until(
            pilot,
            lambda: folder.read_state().get("status") in FINAL_STATUSES,
            240,
            interval=0.5,
            what="the run to end",
            show=lambda: run_state(runs_dir),
        )

        app.open_launch(RunConfig.load(folder.config_file))
        await wait_until(pilot, lambda: isinstance(app.screen, LaunchScreen), 30, what="the launch form")
        await settle(pilot, 0.5)
        await pilot.press("ctrl+l")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, InspectScreen) and app.screen.inspection is not None,
            60,
            what="the gate with an inspection",
        )
        await pilot.pause(0.2)
        assert isinstance(app.screen, InspectScreen) and app.screen.inspection.id == inspection_id
        assert "already made for this model" in str(app.screen.query_one("#status").render())
