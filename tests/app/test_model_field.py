"""The form's model field is checked as the CLI checks it (config/model_source.py): a path that is no model folder,
or a Hub id the offline cache lacks, is an inline error under the field, and Launch refuses it there, before the
inspection gate and before any folder is written. Before, the form accepted it, the gate's inspection crashed on
transformers' OSError, and a launch ended in a CRITICAL crash."""

from __future__ import annotations

import pytest

from grpo_tui.app import make_app
from grpo_tui.screens.launch import LaunchScreen
from tests.remote_hosts import remote, sshd  # noqa: F401  (the fixtures, for the host's case)
from trainer_core.contract.config.model_source import model_problem

from .conftest import wait_until
from .test_launch_screen import PATTERN, SIZE, fill, launch_screen, note, settle

FIRST_TRY = "grpo-tui tiny-model DIR"


@pytest.fixture(autouse=True)
def no_gpus(monkeypatch):
    monkeypatch.setenv("GRPO_TUI_FAKE_GPUS", "0")


async def test_a_model_that_cannot_load_is_an_inline_error_and_launch_refuses_it(runs_dir, tmp_path, monkeypatch):
    missing = str(tmp_path / "x" / "no-such-model")
    model = tmp_path / "model"
    model.mkdir()
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        form = screen.form

        fill(screen, model=missing, **PATTERN)
        await settle(pilot)
        assert form.note("model") == model_problem(missing)  # as typed, the CLI's words
        assert "does not exist on this machine" in form.note("model") and FIRST_TRY in form.note("model")
        await pilot.press("ctrl+l")
        await settle(pilot)
        assert note(screen, "#launch-status").startswith(f"cannot launch: model {missing!r} does not exist")
        assert app.focused is form.widget_for("model")
        assert isinstance(app.screen, LaunchScreen)  # no inspection gate was opened
        assert not runs_dir.exists()

        fill(screen, model=str(model))  # a folder, but no model in it
        await settle(pilot)
        assert "is a folder without config.json" in form.note("model")
        (model / "config.json").write_text("{}")
        fill(screen, model=str(model) + "/")
        await settle(pilot)
        assert form.note("model") == "" and form.check() == []

        monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline, a Hub id must be in the cache
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
        fill(screen, model="org/tiny")
        await settle(pilot)
        assert "the Hub is offline here (HF_HUB_OFFLINE=1)" in form.note("model")
        snapshot = tmp_path / "hub" / "models--org--tiny" / "snapshots" / "abc"
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text("{}")
        fill(screen, model="org/tin")
        await settle(pilot)
        fill(screen, model="org/tiny")
        await settle(pilot)
        assert form.note("model") == "" and form.check() == []
    assert not runs_dir.exists()


@pytest.mark.slow
async def test_a_hosts_model_is_left_to_the_host_which_checks_it_in_its_own_environment(remote, tmp_path, monkeypatch):  # noqa: F811
    from grpo_tui.executors.hosts import load_hosts
    from grpo_tui.widgets.host_picker import HostPicker

    for key, value in remote.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline here too, with a cache of its own: this side refuses it
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "local-hub"))
    hosts = load_hosts(remote.hosts_file)
    app = make_app(tmp_path / "local", hosts={"gpubox": hosts["gpubox"]}, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        form = screen.form
        fill(screen, model="org/not-cached", **PATTERN)
        await settle(pilot)
        assert f"under {tmp_path / 'local-hub'}" in form.note("model")

        screen.query_one(HostPicker).value = "gpubox"
        await wait_until(pilot, lambda: "new run on gpubox" in str(screen.query_one("#title").render()))
        await settle(pilot)
        assert form.note("model") == ""  # a host's model is the host's to check
        await pilot.press("ctrl+l")
        status = screen.query_one("#launch-status")
        await wait_until(pilot, lambda: "cannot launch on gpubox" in str(status.render()), timeout=60)
        said = str(status.render())
        assert "model 'org/not-cached' is a Hub id and the Hub is offline here (HF_HUB_OFFLINE=1)" in said
        assert str(tmp_path / "local-hub") not in said  # the host's cache, not this side's
        await wait_until(pilot, lambda: app.focused is form.widget_for("model"), timeout=10)
    assert not (remote.runs / "gpubox").exists() or not any((remote.runs / "gpubox").iterdir())
