"""Two processes, two worlds; and the small commands: tiny-model, and the demo of a KL pathology (the default demo's
build from a cold cache is test_demo_learns.py's)."""

from __future__ import annotations

import subprocess
import sys

from trainer_core.contract.config.stack import TRAINING_STACK
from trainer_core.contract.run.events import HealthWarning, RunFinished
from trainer_core.contract.run.status import Status

from ..helpers import ROOT, cli, events_of, only_run

HEAVY = TRAINING_STACK
# every module of these packages is imported, found by walking them, so a new module is covered the day it lands
LIGHT_PACKAGES = ("grpo_tui", "trainer_core.contract")
# the run's root process and what it starts a vLLM server with: launched by the app side, so as light
LIGHT_TRAINER_MODULES = ("trainer_core", "trainer_core.root.run_root", "trainer_core.generation.vllm_server")


def loaded_after(code: str) -> set[str]:
    """Every module in ``sys.modules`` after a fresh interpreter runs ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    return set(out.split())


def modules_after(code: str) -> set[str]:
    return {name.split(".")[0] for name in loaded_after(code)}


def modules_on_disk(package: str) -> set[str]:
    """The dotted names of a package's modules, from its files (not from an import). A .py file in a folder
    that is not a package (the demo environment shipped as package data) is data, not a module."""
    folder = ROOT.joinpath(*package.split("."))
    names = set()
    for path in folder.rglob("*.py"):
        if not all(
            (parent / "__init__.py").exists()
            for parent in [path.parent, *path.parent.parents]
            if parent.is_relative_to(folder)
        ):
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_app_side_never_imports_the_training_stack():
    loaded = loaded_after(
        "import importlib, pkgutil\n"
        f"for root in {LIGHT_PACKAGES!r}:\n"
        "    package = importlib.import_module(root)\n"
        "    for found in pkgutil.walk_packages(package.__path__, root + '.'):\n"
        "        importlib.import_module(found.name)\n"
        f"for name in {LIGHT_TRAINER_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "from grpo_tui.app import make_app; make_app('/tmp/none')\n"
        "from grpo_tui.cli import build_parser\n"
        "for command in ('demo', 'runs', 'watch latest', 'logs latest', 'stop latest', 'tiny-model out'):\n"
        "    build_parser().parse_args(command.split())"
    )
    expected = set(LIGHT_TRAINER_MODULES).union(*(modules_on_disk(p) for p in LIGHT_PACKAGES))
    assert {
        "grpo_tui.cli.train",
        "grpo_tui.cli.launch",
        "grpo_tui.cli.runs",
        "grpo_tui.cli.stop",
        "grpo_tui.cli.logs",
        "grpo_tui.cli.watch",
        "grpo_tui.cli.inspect",
        "grpo_tui.cli.merge",
        "grpo_tui.cli.tiny_model",
        "grpo_tui.cli.demo",
        "grpo_tui.services.catalog.folders",
        "grpo_tui.services.catalog.status",
        "grpo_tui.services.stream.live_view",
        "grpo_tui.api",
        "trainer_core.contract.run.events",
        "trainer_core.contract.run.status",
        "trainer_core.contract.run.event_log",
    } <= expected
    assert expected <= loaded, sorted(expected - loaded)
    heavy = {name.split(".")[0] for name in loaded} & set(HEAVY)
    assert not heavy, heavy


def test_the_trainer_never_imports_textual():
    loaded = modules_after(
        "import trainer_core.training.runner, trainer_core.training.trl_setup, trainer_core.training.callbacks, trainer_core.__main__\n"
        "from trainer_core.training.trl_setup import build_grpo_config\n"
        "from trainer_core.contract.config.run_config import RunConfig\n"
        "build_grpo_config(RunConfig(model='m', rl_env_module='e', rl_env_class='E'), '/tmp/out')"
    )
    assert "trl" in loaded and "textual" not in loaded


def test_tiny_model_command_writes_a_loadable_model(tmp_path):
    result = cli("tiny-model", str(tmp_path / "tiny"), "--random")  # the pre-trained build: the wheel's test
    assert result.returncode == 0, result.stderr
    code = (
        "import sys; from transformers import AutoModelForCausalLM, AutoTokenizer\n"
        "t = AutoTokenizer.from_pretrained(sys.argv[1]); m = AutoModelForCausalLM.from_pretrained(sys.argv[1])\n"
        "ids = t.apply_chat_template([{'role': 'user', 'content': 'hi'}], add_generation_prompt=True, return_dict=True, return_tensors='pt')\n"
        "out = m.generate(**ids, max_new_tokens=4, do_sample=False)\n"
        "print(out.shape[1] > ids['input_ids'].shape[1], t.padding_side)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "tiny")],
        capture_output=True,
        text=True,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
        cwd=ROOT,
    )
    assert out.stdout.split() == ["True", "left"], out.stderr


def test_the_kl_pathology_demo_explodes_warns_and_stops_itself(pretrained_tiny_model, tmp_path):
    cache = tmp_path / "cache"
    (cache / "grpo-tui").mkdir(parents=True)
    (cache / "grpo-tui" / "tiny-model").symlink_to(pretrained_tiny_model)  # the demo's cached model: nothing to build
    runs = tmp_path / "runs"
    result = cli(
        "demo",
        "--pathology",
        "kl",
        "--max-steps",
        "300",
        "--runs-dir",
        str(runs),
        env={"XDG_CACHE_HOME": str(cache)},
    )
    assert "building the tiny demo model" not in result.stdout
    assert result.returncode == 3, result.stdout + result.stderr  # the exit code of a stopped run
    assert "warning kl_explosion" in result.stdout and "advice:" in result.stdout
    folder = only_run(runs)
    events = events_of(folder)
    warned = next(e for e in events if isinstance(e, HealthWarning) and e.rule == "kl_explosion")
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status is Status.STOPPED
    assert finished.reason == f"auto-stop: kl_explosion at step {warned.step}" and finished.step < 300
    assert (folder / "checkpoints" / f"checkpoint-{finished.step}").is_dir()
    # its summary ends on why a failed run scores well: a rule stopped it, and a diverged policy's score is no success
    *_, heldout, note = result.stdout.strip().splitlines()
    assert heldout.startswith("held-out (") and f"at step {finished.step}" in heldout, result.stdout
    assert note.startswith(f"not a success: the kl_explosion rule stopped this run at step {warned.step}"), note
    assert "held-out score is that of a diverged policy" in note and warned.message.rstrip(".") in note
    assert f"grpo-tui watch {folder.name}" in note and warned.advice in note


def test_the_running_app_never_imports_the_training_stack(tmp_path):
    code = """
import asyncio, sys
from grpo_tui.app import make_app
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import Metrics
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status
from trainer_core.contract.config.stack import TRAINING_STACK

folder = RunFolder.create(sys.argv[1])
RunConfig(model="m", rl_env_module="e", rl_env_class="E").save(folder.config_file)
folder.write_state(status=Status.COMPLETED, started=1.0, ended=2.0)
with EventWriter(folder.events_file) as w:
    w.emit(Metrics(step=1, values={"reward": 0.5, "reward_std": 0.1, "kl": 0.01}))

async def main():
    app = make_app(sys.argv[1], start="launch")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.5)
        app.open_monitor(folder.path)
        await pilot.pause(1.0)
        await pilot.press("2", "3", "4", "5", "escape", "escape")
        await pilot.pause(0.5)

asyncio.run(main())
print("HEAVY", sorted(m for m in TRAINING_STACK if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "runs")], capture_output=True, text=True, cwd=ROOT)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr
