"""Keys typed into the launch form as fast as a paste all land, in order; a value far outside its usual range
is warned about under its field and asked about before the launch (issue 44, point 5).

A terminal delivers a fast burst of keys in one read, and the app gets them one after another with no pause
in between. ``burst`` sends keys that way: ``pilot.press`` waits for the app to be idle after every key, which
hides the race (a backspace travels up to the App before its binding runs, so the characters typed after it
used to land first: "-1e-5", 5 backspaces and "4e-5" became "-1")."""

from __future__ import annotations

import json

from textual import events
from textual.keys import _character_to_key
from textual.widgets import Input, Static, TextArea

from grpo_tui.app import make_app
from grpo_tui.screens.confirm import ConfirmScreen
from grpo_tui.screens.inspect import InspectScreen
from grpo_tui.screens.launch import LaunchScreen

from ..helpers import EXAMPLES
from .conftest import screen_text, wait_until

SIZE = (120, 40)
PATTERN = {"rl_env_module": str(EXAMPLES / "pattern_env.py"), "rl_env_class": "PatternEnv"}


def burst(app, *keys: str) -> None:
    """Send ``keys`` (key names, or characters) to the app at once, as a terminal delivers a paste-speed burst."""
    for key in keys:
        char = key if len(key) == 1 else None
        event = events.Key(_character_to_key(key) if char and not key.isalnum() else key, char)
        event.set_sender(app)
        app._driver.send_message(event)


async def settled(pilot) -> LaunchScreen:
    """The launch screen once the keys sent have been handled and the debounced validation has run."""
    screen = pilot.app.screen
    assert isinstance(screen, LaunchScreen)
    await pilot.pause(0.4)
    await wait_until(pilot, lambda: screen.form._timer is None, what="the form's debounced validation")
    await pilot.pause()
    return screen


async def focus(pilot, name: str):
    screen = pilot.app.screen
    assert isinstance(screen, LaunchScreen)
    widget = screen.form.widget_for(name)
    assert screen.form.focus_field(name)
    await wait_until(pilot, lambda: pilot.app.focused is widget, 10, what=f"the {name} field focused")
    return widget


async def test_keys_typed_as_fast_as_a_paste_all_land_in_order(tmp_path):
    app = make_app(tmp_path / "runs", start="launch")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        lr = await focus(pilot, "lr")
        assert isinstance(lr, Input)
        lr.value = "-1e-5"  # the mistake, typed earlier
        lr.cursor_position = len(lr.value)
        await settled(pilot)

        for _ in range(3):  # every time: the loss was a race, so try it more than once
            burst(app, "end", *["backspace"] * 5, *"4e-5")
            screen = await settled(pilot)
            assert lr.value == "4e-5"
            assert screen.form.config().lr == 4e-5
            assert screen.form.note("lr") == ""
            lr.value = "-1e-5"
            await settled(pilot)

        # pilot.press of every key, no pause between them
        await pilot.press("end", *["backspace"] * 5, *"4e-5")
        screen = await settled(pilot)
        assert lr.value == "4e-5" and screen.form.config().lr == 4e-5

        # the cursor keys keep their place too
        name = await focus(pilot, "project_name")
        assert isinstance(name, Input)
        name.value = ""
        burst(app, *"abc", "left", "left", "X", "end", "backspace", "Y")
        screen = await settled(pilot)
        assert name.value == "aXbY"
        assert screen.form.config().project_name == "aXbY"

        # and in a JSON field (a TextArea)
        env = await focus(pilot, "rl_env_config")
        assert isinstance(env, TextArea)
        env.text = ""
        burst(app, *'{"a":1', "backspace", *"2}")
        screen = await settled(pilot)
        assert env.text == '{"a":2}'
        assert screen.form.config().rl_env_config == {"a": 2}


async def test_an_lr_far_outside_its_usual_range_is_warned_about_before_the_launch(tmp_path):
    model = tmp_path / "model"  # a folder that reads as a model folder: launching never gets past the gate here
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llama"}))
    app = make_app(tmp_path / "runs", start="launch")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LaunchScreen)
        for field, value in {"model": str(model), **PATTERN}.items():
            widget = screen.form.widget_for(field)
            assert isinstance(widget, Input)
            widget.value = value
        lr = await focus(pilot, "lr")
        assert isinstance(lr, Input)
        lr.value = ""
        burst(app, "4")  # what a lost keystroke makes of 4e-5
        await settled(pilot)
        assert screen.form.config().lr == 4.0
        warning = (
            "lr is 4, more than 1000 times above its usual range (1e-6 to 1e-5 is typical for full fine-tuning): "
            "check it before launching."
        )
        assert screen.form.note("lr") == warning
        assert screen.form.check() == []  # a warning, not a problem
        assert warning in " ".join(str(screen.query_one("#info-lr", Static).visual).split())

        await pilot.press("ctrl+l")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, what="the question")
        shown = " ".join(screen_text(app).split())
        assert "Launch with a setting far outside its usual range?" in shown
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is screen, 10, what="back in the form")
        await wait_until(pilot, lambda: app.focused is lr, 10, what="the lr field focused")
        assert not screen.launching
        assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())

        await pilot.press("ctrl+l")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, what="the question again")
        await pilot.press("y")
        await wait_until(pilot, lambda: isinstance(app.screen, InspectScreen), 30, what="the inspection gate")
        app.screen.workers.cancel_group(app.screen, "inspect")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is screen, 10, what="back in the form")

        lr.value = "4e-5"  # a usual value: no question
        await settled(pilot)
        assert screen.form.note("lr") == ""
