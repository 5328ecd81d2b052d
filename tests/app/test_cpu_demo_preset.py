"""The form's "CPU demo" preset names its model, the demo's tiny model in the user's cache, and a launch with it
builds that model first, in a child process (issue 44, point 6: the preset left ``model`` empty).

The child here is a stand-in that writes a model folder once the test lets it (the real build takes minutes on a
CPU; the demo's own tests build it): what is tested is the app's side, that the path is filled in, that nothing under the model
field calls it a problem before it is built, and that the launch waits for the build and then goes on."""

from __future__ import annotations

import sys

import pytest
from textual.widgets import Input, Select

from grpo_tui.app import make_app
from grpo_tui.presets import preset_values
from grpo_tui.screens.inspect import InspectScreen
from grpo_tui.screens.launch import LaunchScreen
from grpo_tui.services.lifecycle import tiny_model
from grpo_tui.widgets.status_line import StatusLine

from .conftest import wait_until

SIZE = (120, 40)
FAKE_BUILD = """
import json, sys, time
from pathlib import Path
out = Path(sys.argv[1])
if not (out / "config.json").exists():
    print(f"building the tiny demo model in {out} ...", flush=True)
    gate = out.parent / "finish-the-build"  # the test opens it once it has seen the build under way
    deadline = time.monotonic() + 120
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps({"model_type": "llama"}))
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private user cache, and a quick stand-in for the build (``python -m trainer_core tiny-model``)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(tiny_model, "BUILD", [sys.executable, "-c", FAKE_BUILD])
    monkeypatch.setenv("GRPO_TUI_FAKE_GPUS", "0")
    return tmp_path / "cache" / "grpo-tui"


async def settle(pilot) -> LaunchScreen:
    screen = pilot.app.screen
    assert isinstance(screen, LaunchScreen)
    await pilot.pause(0.4)
    await wait_until(pilot, lambda: screen.form._timer is None, what="the form's debounced validation")
    await pilot.pause()
    return screen


def test_the_preset_names_the_tiny_model_in_the_user_cache(cache):
    assert preset_values("CPU demo")["model"] == str(cache / "tiny-model")
    assert tiny_model.tiny_model_dir() == cache / "tiny-model"


async def test_the_cpu_demo_preset_fills_in_the_model_and_a_launch_builds_it_first(cache, tmp_path):
    model = cache / "tiny-model"
    app = make_app(tmp_path / "runs", start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        field = screen.form.widget_for("model")
        assert isinstance(field, Input) and field.value == ""
        screen.query_one("#preset", Select).value = "CPU demo"
        screen = await settle(pilot)
        assert field.value == str(model)
        assert screen.form.config().model == str(model)
        assert screen.form.note("model") == ""  # not built yet, and no problem: a launch builds it
        assert screen.form.check() == []
        assert not model.exists()  # nothing is built before a launch asks for it

        await pilot.press("ctrl+l")
        await wait_until(pilot, lambda: screen.building is not None, 10, what="the build started")
        assert "the demo's tiny model first, in" in screen.query_one("#launch-status", StatusLine).text
        await pilot.press("ctrl+l")  # a second launch while it builds waits for the same build
        await pilot.pause(0.2)
        assert screen.building is not None and not isinstance(app.screen, InspectScreen)
        (cache / "finish-the-build").touch()
        await wait_until(pilot, lambda: isinstance(app.screen, InspectScreen), 60, what="the launch going on")
        assert (model / "config.json").exists()
        assert screen.tiny_model_ready and screen.building is None
        log = (cache / "tiny-model.build.log").read_text()
        assert log.count("building the tiny demo model in") == 1  # in its log, not on the app's terminal
        app.screen.workers.cancel_group(app.screen, "inspect")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is screen, 10, what="back in the form")
        status = screen.query_one("#launch-status", StatusLine).text
        assert status == "not launched: the reward inspection was not completed"


async def test_a_failed_build_says_why_and_launches_nothing(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(tiny_model, "BUILD", [sys.executable, "-c", "import sys; sys.exit('no room left on the disk')"])
    app = make_app(tmp_path / "runs", start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        screen.query_one("#preset", Select).value = "CPU demo"
        screen = await settle(pilot)
        await pilot.press("ctrl+l")
        await wait_until(
            pilot,
            lambda: screen.building is None and "could not" in screen.query_one("#launch-status", StatusLine).text,
            30,
            what="the build's failure",
        )
        status = screen.query_one("#launch-status", StatusLine).text
        assert status.startswith(f"could not build the tiny model in {cache / 'tiny-model'}: no room left on the disk")
        assert isinstance(app.screen, LaunchScreen) and not screen.launching
    assert not (tmp_path / "runs").exists()
