"""The development environment is locked: constraints.txt pins what ./dev and CI install, and a change of
pyproject.toml's requirements without a new lock is caught."""

from __future__ import annotations

from pathlib import Path

from tools import lock

ROOT = Path(__file__).resolve().parents[2]


def test_the_lock_matches_the_requirements():
    assert lock.problems() == []


def test_dev_and_ci_install_from_the_lock():
    dev = (ROOT / "dev").read_text()
    assert 'install_into "$VENV" -c constraints.txt' in dev
    assert "./dev test" in (ROOT / ".ci" / "run").read_text()


def test_a_changed_requirement_without_a_new_lock_is_caught(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text((ROOT / "pyproject.toml").read_text().replace('"orjson>=3.9"', '"orjson>=3.10"'))
    assert pyproject.read_text() != (ROOT / "pyproject.toml").read_text()
    (problem,) = lock.problems(pyproject, ROOT / "constraints.txt")
    assert "run ./dev lock" in problem


def test_every_locked_line_is_an_exact_pin_and_torch_and_the_project_are_left_out():
    lines = [line for line in (ROOT / "constraints.txt").read_text().splitlines() if not line.startswith("#")]
    assert lines and all("==" in line for line in lines), lines
    names = {line.split("==")[0].lower() for line in lines}
    assert {"transformers", "trl", "textual", "datasets", "peft", "accelerate"} <= names
    assert not names & {"torch", "grpo-tui", "grpo_tui"}


def test_pins_keep_a_freeze_minus_editables_torch_and_the_project():
    freeze = "-e git+x#egg=grpo_tui\nTorch==2.13.0+cpu\ngrpo-tui==0.1.0\nzlib-ng==1\nabc==2\n"
    assert lock.pins(freeze) == ["abc==2", "zlib-ng==1"]
