"""Installed, not checked out: the built wheel runs the demo and the app from a folder far from the checkout.

Files found relative to the source tree work in a checkout and break once installed, so this test does what a
user does: build the wheel, install it into a fresh virtualenv, and run ``grpo-tui`` from a temporary folder.

How the virtualenv reuses the dev environment's dependencies without seeing the checkout:

- The wheel is built from a copy of the tree, so the build writes no ``build/`` or ``*.egg-info`` into the
  checkout and no stale ``build/lib`` file can slip into the wheel.
- The base interpreter makes the venv without pip; ``pip --python VENV_PYTHON install --no-deps --no-index``
  installs the wheel into it while it is still empty.
- Only then a ``.pth`` file in the venv's site-packages lists the dev venv's site-packages. A path line in a
  ``.pth`` file is appended to ``sys.path`` after the venv's own site-packages, and ``.pth`` files inside an
  appended folder are not executed, so the dev venv's editable-install hook (``__editable__*.pth``, which maps
  ``grpo_tui`` and ``trainer_core`` to the checkout) never runs while torch, textual and trl are found there.

The test checks that this holds: both packages import from the venv, no editable finder is loaded, and the
demo run's provenance names the installed ``pattern_env.py``. Skipped where tmux is not installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from grpo_tui.theming import theme_colors
from tools.tmux import Tmux

from ..helpers import ROOT, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (the app is opened in tmux)"),
]

NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "venv", "build", "dist", "runs", "*.egg-info", "__pycache__", ".pytest_cache"
)
STEPS = 20


class Installed:
    """A fresh venv holding only the wheel, plus a working folder, runs folder and cache outside the checkout."""

    def __init__(self, base: Path):
        self.venv = base / "venv"
        self.work = base / "work"
        self.runs = base / "runs"
        self.cache = base / "cache"
        self.work.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "GRPO_TUI_", "VIRTUAL_ENV"))}
        self.env = {
            **env,
            "PATH": f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            "VIRTUAL_ENV": str(self.venv),
            "XDG_CACHE_HOME": str(self.cache),
            "GRPO_TUI_RUNS_DIR": str(self.runs),
            "HF_HUB_OFFLINE": "1",
            "PYTHONUNBUFFERED": "1",
        }

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            argv, cwd=self.work, env=self.env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
        )

    def python(self, code: str) -> subprocess.CompletedProcess:
        return self.run(self.bin("python"), "-c", code)


def checked(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"{result.args} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def sgr(kind: int, colour: str) -> str:
    """The 24-bit SGR parameters tmux writes for ``colour`` (#RRGGBB) as foreground (38) or background (48)."""
    return f"{kind};2;" + ";".join(str(int(colour[i : i + 2], 16)) for i in (1, 3, 5))


def dev_site_packages() -> list[str]:
    paths = sysconfig.get_paths()
    return list(dict.fromkeys(paths[k] for k in ("purelib", "platlib")))


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    base = tmp_path_factory.mktemp("installed")
    source, dist = base / "source", base / "dist"
    shutil.copytree(ROOT, source, symlinks=True, ignore=NOT_SOURCE)
    checked(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "--no-index",
                str(source),
                "-w",
                str(dist),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    )
    wheel = next(dist.glob("grpo_tui-*.whl"))
    shutil.rmtree(source)

    target = Installed(base)
    base_python = getattr(sys, "_base_executable", None) or sys.executable
    checked(
        subprocess.run(
            [base_python, "-m", "venv", "--without-pip", str(target.venv)], capture_output=True, text=True, timeout=120
        )
    )
    checked(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                target.bin("python"),
                "install",
                "--no-deps",
                "--no-index",
                "--no-compile",
                str(wheel),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    )
    site = checked(target.python("import sysconfig; print(sysconfig.get_paths()['purelib'])")).stdout.strip()
    Path(site, "zz_dev_dependencies.pth").write_text("".join(f"{p}\n" for p in dev_site_packages()))
    return target


def test_the_packages_import_from_the_venv_not_the_checkout(installed):
    code = (
        "import json, sys, grpo_tui, trainer_core, grpo_tui.resources as r; print(json.dumps({"
        "'files': [grpo_tui.__file__, trainer_core.__file__, str(r.demo_config_file()), str(r.demo_env_file())],"
        "'editable': [m for m in sys.modules if m.startswith('__editable__')]}))"
    )
    seen = json.loads(checked(installed.python(code)).stdout)
    venv = installed.venv.resolve()
    for file in seen["files"]:
        assert Path(file).resolve().is_relative_to(venv), f"{file} is not inside the venv {venv}"
    assert seen["editable"] == []


def test_the_wheel_requires_no_plotting_widget_but_its_own(installed):
    """The charts (monitor and compare) are drawn by grpo-tui itself: a fresh install pulls no textual-plotext."""
    code = "import importlib.metadata as m, json; print(json.dumps(m.requires('grpo-tui')))"
    requires = json.loads(checked(installed.python(code)).stdout)
    assert requires and not [r for r in requires if "plotext" in r.lower()], requires


def test_help_and_the_tiny_model_command(installed, tmp_path):
    assert "demo" in checked(installed.run(installed.bin("grpo-tui"), "--help")).stdout
    checked(installed.run(installed.bin("grpo-tui"), "tiny-model", str(tmp_path / "tm")))
    config = json.loads((tmp_path / "tm" / "config.json").read_text())
    assert config.get("model_type"), config
    assert list((tmp_path / "tm").glob("*.safetensors")) and list((tmp_path / "tm").glob("tokenizer*"))


@pytest.fixture(scope="module")
def demo_run(installed) -> tuple[subprocess.CompletedProcess, Path]:
    result = installed.run(installed.bin("grpo-tui"), "demo", "--max-steps", str(STEPS), timeout=240)
    runs = [p for p in installed.runs.iterdir() if p.is_dir()] if installed.runs.is_dir() else []
    return result, (runs[0] if len(runs) == 1 else installed.runs)


def test_the_demo_piped_prints_its_steps_and_completes(installed, demo_run):
    result, run = checked(demo_run[0]), demo_run[1]
    steps = [int(n) for n in re.findall(rf"^step (\d+)/{STEPS}\s+reward ", result.stdout, re.M)]
    assert steps and max(steps) == STEPS, result.stdout
    assert f"completed at step {STEPS}" in result.stdout, result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    environment = json.loads((run / "provenance.json").read_text())["environment"]
    assert Path(environment["file"]).resolve().is_relative_to(installed.venv.resolve()), environment


def test_the_agent_demo_piped_completes_within_three_minutes_and_its_tool_use_pays_off(installed, demo_run):
    """The model is in the cache already (the demo above built it): what is timed is the demo itself."""
    from trainer_core.contract.health.sample_stats import TOOL_SUCCESS
    from trainer_core.contract.run.event_log import EventTail
    from trainer_core.contract.run.events import Metrics

    runs = installed.runs.parent / "agent-runs"
    started = time.monotonic()
    result = checked(installed.run(installed.bin("grpo-tui"), "demo", "--agent", "--runs-dir", str(runs), timeout=240))
    took = time.monotonic() - started
    assert took < 180, f"the agent demo took {took:.0f} s"
    assert "completed at step 50" in result.stdout and "Traceback" not in result.stdout + result.stderr
    (run,) = [p for p in runs.iterdir() if p.is_dir()]
    success = [e.values[TOOL_SUCCESS] for e in EventTail(run / "events.jsonl").poll() if isinstance(e, Metrics)]
    first, last = sum(success[:20]) / 20, sum(success[-20:]) / 20
    assert last >= 2 * first and last > 0, (first, last)
    assert f"{first:.0%} in the first 20 steps, {last:.0%} in the last 20" in result.stdout
    environment = json.loads((run / "provenance.json").read_text())["environment"]
    assert Path(environment["file"]).name == "hotel_agent_env.py"
    assert Path(environment["file"]).resolve().is_relative_to(installed.venv.resolve()), environment
    episodes = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert any(t.get("tool") and "result" in t for e in episodes for t in e["turns"])


@pytest.fixture
def tmux(installed):
    server = Tmux(installed.env, width=120, height=40)
    try:
        yield server
    finally:
        server.kill()


def test_the_app_opens_on_the_demo_run_with_its_theme(installed, demo_run, tmux):
    run_id = demo_run[1].name
    tmux.start([installed.bin("grpo-tui"), "--runs-dir", str(installed.runs)], installed.work)

    def shown():
        text = tmux.screen()
        return (
            text
            if ("runs in" in text and run_id in text) or "Traceback" in text or tmux.exit_code() is not None
            else None
        )

    try:
        text = wait_for(shown, timeout=90, interval=0.25)
    except AssertionError:
        raise AssertionError(f"the runs screen with {run_id} did not show; the pane shows:\n{tmux.screen()}") from None
    assert "Traceback" not in text and tmux.exit_code() is None, text
    dark, coloured = theme_colors("grpo-dark"), tmux.screen(colours=True)
    assert sgr(38, dark["foreground"]) in coloured and sgr(48, dark["panel"]) in coloured, coloured

    tmux.send("q")
    code = tmux.wait_exit()
    wait_for(tmux.exited, timeout=10, interval=0.2)
    assert code == 0 and "Traceback" not in tmux.screen(), f"the app exited {code}:\n{tmux.screen()}"
