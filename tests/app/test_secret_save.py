"""The launch form never shows or saves a notify URL as it is: the command preview masks it, and "save" writes
the config with its URLs masked, in one step, and private (0600) only where a secret would still be in it."""

from __future__ import annotations

import os
import shlex
import stat

import yaml
from textual.widgets import Input

from grpo_tui.app import make_app
from grpo_tui.widgets.config_actions import save_config_file
from trainer_core.contract.config.notify_urls import mask
from trainer_core.contract.config.run_config import RunConfig

from .test_launch_screen import PATTERN, SIZE, fill, launch_screen, no_gpus, note, settle  # noqa: F401

SECRET = "f0rm-s3cr3t"
URL = f"https://hooks.example.org/services/{SECRET}?token={SECRET}#slack"


async def test_the_form_previews_and_saves_notify_urls_masked(runs_dir, no_gpus, tmp_path):  # noqa: F811
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        fill(screen, model="org/model", notify=URL, **PATTERN)
        await settle(pilot)
        assert screen.form.config().notify == [URL]
        assert SECRET not in screen.preview_text and f"--notify {shlex.quote(mask(URL))}" in screen.preview_text

        path = tmp_path / "shared.yaml"
        screen.query_one("#config-path", Input).value = str(path)
        await pilot.press("ctrl+s")
        await pilot.pause()
        said = note(screen, "#file-status")
        assert said.startswith(f"saved {path}") and "masked" in said and SECRET not in said
    assert SECRET not in path.read_text()
    assert yaml.safe_load(path.read_text())["notify"] == ["https://hooks.example.org/***#slack"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".shared.yaml")]  # no temporary file left


def test_a_saved_config_that_still_holds_a_secret_is_private(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("{}")
    path.chmod(0o644)
    said = save_config_file(RunConfig(notify=[URL], project_name=f"/services/{SECRET}"), path)
    assert "0600" in said and stat.S_IMODE(path.stat().st_mode) == 0o600
    said = save_config_file(RunConfig(notify=[URL], project_name="p"), path)
    assert SECRET not in path.read_text() and stat.S_IMODE(path.stat().st_mode) == 0o600  # the mode it had
    other = tmp_path / "new.yaml"
    umask = os.umask(0o022)
    os.umask(umask)
    save_config_file(RunConfig(notify=[URL], project_name="p"), other)
    assert SECRET not in other.read_text() and stat.S_IMODE(other.stat().st_mode) == 0o666 & ~umask
