"""The launch form's Slurm inputs: the same ``slurm`` mapping as ``launch --slurm`` and its flags, the same
messages as the CLI, and a run submitted from them to a real single-node Slurm (tests/slurm_cluster.py)."""

from __future__ import annotations

import shlex

import pytest
from textual.widgets import Input, Label, Switch

from grpo_tui.app import make_app
from grpo_tui.cli import build_parser
from grpo_tui.cli.common import BadInput
from grpo_tui.cli.launch import with_slurm
from grpo_tui.config_flags import config_from_args
from grpo_tui.screens.launch import LaunchScreen
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.widgets.slurm_fields import SlurmFields, settings_from
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import Metrics
from trainer_core.contract.run.status import FINAL

from ..helpers import events_of, wait_until
from ..slurm_cluster import slurm  # noqa: F401
from .test_launch_screen import SIZE, fill, launch_screen, settle, skip_the_gate, tiny_pattern_run


def cli_mapping(*flags: str) -> dict:
    """The ``slurm`` mapping ``grpo-tui launch FLAGS`` builds."""
    args = build_parser().parse_args(["launch", "--model", "m", *flags])
    return with_slurm(config_from_args(args), args).slurm


@pytest.mark.parametrize(
    ("values", "flags"),
    [
        ({}, ["--slurm"]),
        ({"partition": "gpu", "time": "90"}, ["--slurm", "--partition", "gpu", "--time", "90"]),
        (
            {"time": "1-12:00:00", "nodes": "2", "gpus_per_node": "4"},
            ["--time", "1-12:00:00", "--nodes", "2", "--gpus-per-node", "4"],
        ),
        (
            {"sbatch_args": "--account=lab '--comment=a b'", "grace": "60"},
            ["--slurm", "--sbatch-arg=--account=lab", "--sbatch-arg=--comment=a b", "--slurm-grace", "60"],
        ),
        ({"gpus_per_node": "0", "partition": " debug "}, ["--slurm", "--gpus-per-node", "0", "--partition", "debug"]),
    ],
)
def test_the_inputs_build_the_mapping_the_cli_flags_build(values, flags):
    assert settings_from(True, values) == cli_mapping(*flags)
    assert settings_from(False, values) == {}, "the switch off: the run runs here"


def slurm_input(screen: LaunchScreen, key: str) -> Input:
    return screen.query_one(f"#slurm-{key}", Input)


async def test_the_form_checks_the_inputs_with_the_cli_messages(runs_dir, tiny_model, monkeypatch):
    monkeypatch.setenv("GRPO_TUI_FAKE_GPUS", "0")
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        form = screen.form
        fill(screen, **tiny_pattern_run(tiny_model, max_steps=2))
        assert isinstance(form.widget_for("slurm"), SlurmFields)
        assert all(slurm_input(screen, key).disabled for key in ("partition", "nodes"))
        assert form.focus_field("slurm")
        await pilot.pause()
        screen.query_one("#slurm-submit", Switch).value = True
        await settle(pilot)
        assert form.config().slurm == {"nodes": 1} and not slurm_input(screen, "nodes").disabled
        assert "--slurm --nodes 1" in screen.preview_text

        slurm_input(screen, "nodes").value = "0"
        slurm_input(screen, "time").value = "soon"
        await settle(pilot)
        expected = [
            "slurm time must be minutes (e.g. 90) or [D-]HH:MM:SS (e.g. 1-12:00:00), got 'soon'.",
            "slurm nodes must be a whole number, at least 1; got 0.",
        ]
        with pytest.raises(BadInput) as refused:  # the CLI refuses the same values, with the first message
            cli_mapping("--time", "soon", "--nodes", "0")
        assert str(refused.value) == expected[0]
        assert [
            str(p) for p in RunConfig(slurm={"time": "soon", "nodes": 0}).problems() if p.field == "slurm"
        ] == expected
        assert form.note("slurm") == "\n".join(expected)
        for key in ("time", "nodes"):
            assert screen.query_one(f"#slurm-name-{key}", Label).has_class("-problem")
        assert not screen.query_one("#slurm-name-partition", Label).has_class("-problem")

        slurm_input(screen, "nodes").value = "1"
        slurm_input(screen, "time").value = "1"
        await settle(pilot)
        assert form.note("slurm").startswith("slurm grace (300 s, the default) must be shorter than the time limit")
        slurm_input(screen, "grace").value = "30"
        await settle(pilot)
        assert form.note("slurm") == "" and form.check() == []
        assert not screen.query_one("#slurm-name-time", Label).has_class("-problem")


@pytest.mark.slow
async def test_a_run_launched_to_slurm_from_the_form_fields_trains_there(
    slurm,  # noqa: F811
    runs_dir,
    tiny_model,
    monkeypatch,
):
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    monkeypatch.setenv("GRPO_TUI_FAKE_GPUS", "0")
    app = make_app(runs_dir, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        screen = await launch_screen(pilot)
        fill(screen, **tiny_pattern_run(tiny_model, max_steps=2))
        screen.query_one("#slurm-submit", Switch).value = True
        await settle(pilot, 0.1)
        for key, value in {
            "partition": "debug",
            "time": "10",
            "nodes": "1",
            "sbatch_args": "--cpus-per-task=2 --job-name=from-the-form",
            "grace": "60",
        }.items():
            slurm_input(screen, key).value = value
        await settle(pilot)
        wanted = {
            "partition": "debug",
            "time": 10,
            "nodes": 1,
            "sbatch_args": ["--cpus-per-task=2", "--job-name=from-the-form"],
            "grace": 60,
        }
        assert screen.form.config().slurm == wanted
        argv = shlex.split(screen.preview_text.removeprefix("$ "))
        args = build_parser().parse_args(argv[1:])
        assert with_slurm(config_from_args(args), args) == screen.form.config(), "the command builds it back"
        assert "--slurm --partition debug --time 10 --nodes 1" in screen.preview_text

        await pilot.press("ctrl+l")
        await skip_the_gate(pilot)
        await wait_until(
            pilot, lambda: isinstance(app.screen, MonitorScreen), 90, interval=0.5, what="the run's monitor"
        )
        monitor = app.screen
        assert isinstance(monitor, MonitorScreen)
        folder = monitor.folder
        state = folder.read_state()
        job = state["slurm_job_id"]
        assert state["executor"] == "slurm" and RunConfig.load(folder.config_file).slurm == wanted
        script = (folder.path / "slurm" / "job.sbatch").read_text()
        for option in (
            "--partition=debug",
            "--time=10",
            "--nodes=1",
            "--cpus-per-task=2",
            "--job-name=from-the-form",
            "--signal=B:TERM@60",
        ):
            assert f"#SBATCH {option}" in script, option
        info = slurm.job_info(job)
        assert info.get("JobName") == "from-the-form", info
        assert (info.get("Partition") or "?").split()[0] == "debug", info  # the parser keeps the next word

        finals = {s.value for s in FINAL}
        await wait_until(
            pilot,
            lambda: folder.read_state().get("status") in finals,
            240,
            interval=0.5,
            what="the job to end",
            show=lambda: (folder.path / "trainer.log").read_text(errors="replace")[-3000:],
        )
        assert folder.read_state()["status"] == "completed", (folder.path / "trainer.log").read_text()[-3000:]
        assert [e.step for e in events_of(folder.path) if isinstance(e, Metrics)] == [1, 2]
        assert (folder.path / "slurm" / f"slurm-{job}.out").exists()
