"""Two processes, two worlds; and the small commands (tiny-model, demo) work from a cold start."""

from __future__ import annotations

import subprocess
import sys

from .conftest import ROOT, cli, events_of, only_run

HEAVY = ("torch", "transformers", "trl", "datasets", "peft")


def modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    return {name.split(".")[0] for name in out.split()}


def test_the_app_side_never_imports_the_training_stack():
    loaded = modules_after(
        "import grpo_tui, grpo_tui.cli, grpo_tui.services.foreground, grpo_tui.services.supervisor\n"
        "import grpo_tui.services.gpus, grpo_tui.services.registry, grpo_tui.services.live_view, grpo_tui.api\n"
        "import trainer_core.run_root, trainer_core.proctree, trainer_core.vllm_server\n"
        "import grpo_tui.app, grpo_tui.screens.monitor, grpo_tui.screens.runs, grpo_tui.screens.compare\n"
        "import grpo_tui.screens.launch, grpo_tui.screens.inspect, grpo_tui.services.inspections, grpo_tui.presets\n"
        "from grpo_tui.app import make_app; make_app('/tmp/none')\n"
        "from grpo_tui.cli import build_parser; build_parser().parse_args(['demo'])"
    )
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_the_trainer_never_imports_textual():
    loaded = modules_after(
        "import trainer_core.runner, trainer_core.trl_setup, trainer_core.callbacks, trainer_core.__main__\n"
        "from trainer_core.trl_setup import build_grpo_config\n"
        "from trainer_core.contract.config import RunConfig\n"
        "build_grpo_config(RunConfig(model='m', rl_env_module='e', rl_env_class='E'), '/tmp/out')"
    )
    assert "trl" in loaded and "textual" not in loaded


def test_tiny_model_command_writes_a_loadable_model(tmp_path):
    result = cli("tiny-model", str(tmp_path / "tiny"))
    assert result.returncode == 0, result.stderr
    code = (
        "import sys; from transformers import AutoModelForCausalLM, AutoTokenizer\n"
        "t = AutoTokenizer.from_pretrained(sys.argv[1]); m = AutoModelForCausalLM.from_pretrained(sys.argv[1])\n"
        "ids = t.apply_chat_template([{'role': 'user', 'content': 'hi'}], add_generation_prompt=True, return_dict=True, return_tensors='pt')\n"
        "out = m.generate(**ids, max_new_tokens=4, do_sample=False)\n"
        "print(out.shape[1] > ids['input_ids'].shape[1], t.padding_side)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "tiny")], capture_output=True, text=True,
                         env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}, cwd=ROOT)
    assert out.stdout.split() == ["True", "left"], out.stderr


def test_demo_builds_the_model_once_and_trains(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    runs = tmp_path / "runs"
    result = cli("demo", "--max-steps", "3", "--runs-dir", str(runs), env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "building the tiny demo model" in result.stdout
    assert "step 3/3" in result.stdout and "run completed" in result.stdout
    assert [e["step"] for e in events_of(only_run(runs)) if e["type"] == "metrics"] == [1, 2, 3]
    again = cli("demo", "--max-steps", "1", "--runs-dir", str(tmp_path / "runs2"), env=env)
    assert again.returncode == 0 and "building the tiny demo model" not in again.stdout


def test_the_running_app_never_imports_the_training_stack(tmp_path):
    code = """
import asyncio, sys
from grpo_tui.app import make_app
from trainer_core.contract.config import RunConfig
from trainer_core.contract.event_log import EventWriter
from trainer_core.contract.run_folder import RunFolder

folder = RunFolder.create(sys.argv[1])
RunConfig(model="m", rl_env_module="e", rl_env_class="E").save(folder.config_file)
folder.write_state(status="completed", started=1.0, ended=2.0)
with EventWriter(folder.events_file) as w:
    w.emit("metrics", step=1, reward=0.5, reward_std=0.1, kl=0.01)

async def main():
    app = make_app(sys.argv[1], start="launch")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.5)
        app.open_monitor(folder.path)
        await pilot.pause(1.0)
        await pilot.press("2", "3", "4", "5", "escape", "escape")
        await pilot.pause(0.5)

asyncio.run(main())
print("HEAVY", sorted(m for m in ("torch", "transformers", "trl", "datasets", "peft") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "runs")], capture_output=True, text=True, cwd=ROOT)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr
