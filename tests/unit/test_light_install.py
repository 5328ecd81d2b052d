"""A light install (``pip install grpo-tui``, no ``[train]`` extra): what needs the trainer says what to install.

The trainer's packages are looked up with ``find_spec`` (never imported); here the lookup is replaced so that they
are missing, and every command that trains, loads or builds a model here is run in-process through ``main``: one
line naming ``pip install 'grpo-tui[train]'`` and exit 2, before anything is created. The real light install, a
fresh virtualenv with the wheel and no extras, is driven in tests/e2e/test_wheel_install.py.
"""

from __future__ import annotations

import pytest

from grpo_tui.cli import main
from grpo_tui.cli.common import EXIT_BAD_INPUT, TRAIN_EXTRA, BadInput, needs_trainer
from grpo_tui.services.records import host_info
from grpo_tui.services.records.host_info import TRAINER_MODULES, HostInfo, install_kind, missing_trainer
from grpo_tui.services.records.wire import WireError

REAL_FIND_SPEC = host_info.find_spec


def lacking(monkeypatch, *absent: str, broken: tuple[str, ...] = ()) -> None:
    """``find_spec`` as a light install answers it: ``absent`` are not found, ``broken`` raise."""

    def find_spec(name, package=None):
        if name in broken:
            raise ValueError(f"{name}.__spec__ is None")
        return None if name in absent else REAL_FIND_SPEC("json")

    monkeypatch.setattr(host_info, "find_spec", find_spec)


@pytest.fixture
def light(monkeypatch, tmp_path):
    lacking(monkeypatch, *TRAINER_MODULES)
    monkeypatch.setenv("GRPO_TUI_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def test_with_every_package_found_the_trainer_is_here(monkeypatch):
    lacking(monkeypatch)
    assert missing_trainer() == [] and install_kind() == "train"
    needs_trainer("train")  # no error


def test_one_missing_package_makes_a_light_install_and_is_named(monkeypatch):
    lacking(monkeypatch, "trl", broken=("peft",))
    assert missing_trainer() == ["trl", "peft"] and install_kind() == "light"
    with pytest.raises(BadInput) as refused:
        needs_trainer("merge", "merge on the run's host (--host NAME)")
    message = str(refused.value)
    assert message == (
        "grpo-tui merge needs the trainer, which this install lacks (no trl, peft): "
        "pip install 'grpo-tui[train]', or merge on the run's host (--host NAME)"
    )


def test_the_lookup_never_imports_the_trainer(monkeypatch):
    import sys

    looked = []
    monkeypatch.setattr(host_info, "find_spec", lambda name, package=None: looked.append(name))
    assert install_kind() == "light" and looked == list(TRAINER_MODULES)
    assert not [m for m in TRAINER_MODULES if m in sys.modules and m not in looked]


TRAINER_COMMANDS = [
    ["train", "--model", "m"],
    ["train", "--resume", "latest"],
    ["launch", "--model", "m"],
    ["launch", "--dry-run", "--json", "--model", "m"],
    ["launch", "--slurm", "--model", "m"],
    ["launch", "--resume", "latest"],
    ["inspect", "--model", "m"],
    ["merge", "latest", "--output", "out"],
    ["eval", "latest"],
    ["tiny-model", "tm"],
    ["demo"],
    ["demo", "--agent"],
]


@pytest.mark.parametrize("argv", TRAINER_COMMANDS, ids=" ".join)
def test_a_command_that_needs_the_trainer_names_the_extra_in_one_line_and_exits_2(light, argv, capsys):
    assert main(argv) == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: grpo-tui {argv[0]} needs the trainer, which this install lacks (no torch,")
    assert TRAIN_EXTRA in err
    assert not (light / "runs").exists() and not (light / "cache").exists() and not (light / "tm").exists()


def test_launch_on_a_host_does_not_need_the_trainer_here(light, capsys, monkeypatch):
    monkeypatch.setenv("GRPO_TUI_HOSTS", str(light / "hosts.yaml"))
    assert main(["launch", "--host", "nosuchhost", "--model", "m"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "nosuchhost" in err and "trainer" not in err


def test_info_says_which_kind_of_install_this_is(light, capsys):
    import json

    assert main(["info"]) == 0
    assert f"install: light (the app and the CLI: watch, list, stop, export; to train here: {TRAIN_EXTRA})" in (
        capsys.readouterr().out.splitlines()
    )
    assert main(["info", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["install"] == "light" and HostInfo.from_wire(printed).install == "light"


@pytest.mark.parametrize("install", ["light", "train", None])
def test_info_json_is_parsed_with_or_without_the_install_kind(install):
    reply = {"version": "1.0", "run_format": 2, "runs_dir": "/r", "gpus": []}
    if install is not None:
        reply["install"] = install
    info = HostInfo.from_wire(reply)
    assert info.install == install and HostInfo.from_wire(info.to_wire()) == info


@pytest.mark.parametrize("bad", ["heavy", 1, True, ["light"]])
def test_an_install_kind_that_is_not_one_is_named(bad):
    with pytest.raises(WireError, match="install: expected 'light', 'train' or null"):
        HostInfo.from_wire({"run_format": 2, "install": bad})
