"""End to end in a real terminal: ``grpo-tui watch RUN`` in tmux, read off the screen and driven by keys.

Pilot tests drive the app in-process; these run the installed command in a pseudo-terminal as a person
would (the CLI's TTY check, the terminal driver, the key handling, the exit), look at what the pane shows
with ``tmux capture-pane`` and type into it with ``tmux send-keys``. Each test starts its own tmux server
on a private socket (``tmux -L``) and kills it at the end, so it neither sees nor touches the user's tmux.
Skipped where tmux is not installed.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from tools.tmux import Tmux
from trainer_core.contract.run.folder import RunFolder

from ..helpers import PATTERN_FLAGS, ROOT, cli
from ..run_fixtures import make_finished_run

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

WIDTH, HEIGHT = 100, 30
STOP_TIMEOUT = 300.0  # a graceful stop finishes the step and saves a checkpoint first


@pytest.fixture
def tmux():
    server = Tmux(width=WIDTH, height=HEIGHT)
    try:
        yield server
    finally:
        server.kill()


def watch_argv(run: str, runs_dir: Path) -> list[str]:
    return [sys.executable, "-m", "grpo_tui", "watch", run, "--runs-dir", str(runs_dir)]


def launch_args(model: str, runs_dir: Path, *extra: str) -> list[str]:
    """As tests/integration/test_supervisor.py launches: the pattern environment, quick steps."""
    return ["launch", "--json", "--model", model, *PATTERN_FLAGS, "--runs-dir", str(runs_dir), *extra]


def shown_step(text: str) -> int:
    steps = [int(n) for n in re.findall(r"\bstep (\d+)/", text)]
    return max(steps, default=0)


def charts_shown(text: str) -> bool:
    """A chart's border title (a warning's message may name reward_std too, never with the border)."""
    return "─ reward_std" in text


def warnings_shown(text: str) -> bool:
    """The Warnings tab: its empty-list line, or a warning's first line (``WARN     rule  step N``)."""
    return "No warnings" in text or re.search(r"^(INFO|WARN|CRITICAL) +\S+ +step \d+", text, re.M) is not None


def test_watch_stop_and_quit_a_live_run_in_a_real_terminal(tiny_model, runs_dir, tmux):
    result = cli(*launch_args(tiny_model, runs_dir, "--max-steps", "2000"))
    assert result.returncode == 0, result.stderr
    launched = json.loads(result.stdout)
    folder = RunFolder(Path(launched["path"]))
    try:
        tmux.start(watch_argv(launched["run_id"], runs_dir), ROOT)
        assert tmux.pane("#{window_width}x#{window_height}") == f"{WIDTH}x{HEIGHT}"

        # the monitor opens on the run and follows it live
        screen = tmux.wait_screen(lambda s: "RUNNING" in s and shown_step(s) >= 2, what="RUNNING at step 2 or later")
        assert launched["run_id"] in screen
        assert "Charts" in screen and "Warnings" in screen and charts_shown(screen)

        # 2: the warnings tab (the charts give way to warnings, or to the plain "no warnings" line)
        tmux.send("2")
        tmux.wait_screen(lambda s: not charts_shown(s) and warnings_shown(s), what="the Warnings tab")
        # 4: the Log tab shows the trainer's progress lines, one per logged step
        tmux.send("4")
        log = tmux.wait_screen(
            lambda s: re.search(r"^ *step \d+/2000 +reward", s, re.M), what="progress lines in the Log tab"
        )
        assert not charts_shown(log)
        # 1: back to the charts
        tmux.send("1")
        tmux.wait_screen(charts_shown, what="the Charts tab again")

        # s, then y in the confirmation: a graceful stop with a checkpoint
        tmux.send("s")
        tmux.wait_screen(lambda s: "Stop run" in s and "Yes (y)" in s, what="the stop confirmation")
        tmux.send("y")
        screen = tmux.wait_screen(lambda s: "STOPPED" in s, timeout=STOP_TIMEOUT, what="STOPPED in the header")
        assert "Stop run" not in screen  # the confirmation closed

        state = folder.read_state()
        assert state["status"] == "stopped", state
        assert folder.checkpoints(), f"no checkpoint in {folder.path}"

        # q quits the app, and the command exits cleanly; the run folder is left as it is
        tmux.send("q")
        assert tmux.wait_exit() == 0
        assert folder.read_state()["status"] == "stopped"
    finally:
        cli("stop", launched["run_id"], "--runs-dir", str(runs_dir), "--force", timeout=120)


def test_reattach_to_a_finished_run_in_a_real_terminal(tmp_path, tmux):
    runs_dir = tmp_path / "runs"
    run = make_finished_run(runs_dir, steps=40, status="completed")
    tmux.start(watch_argv(run.name, runs_dir), ROOT)
    screen = tmux.wait_screen(lambda s: "COMPLETED" in s and "step 40/40" in s, what="COMPLETED at step 40/40")
    assert run.name in screen
    assert "0:00:22" in screen  # the run's own duration (ended - started), not the time since it ended
    assert "CRITICAL mode_collapse" in screen  # the critical banner of the fixture's warning
    tmux.send("q")
    assert tmux.wait_exit() == 0


def test_the_demo_opens_its_run_and_says_what_became_of_it(pretrained_tiny_model, runs_dir, tmp_path, tmux):
    cache = tmp_path / "cache"
    (cache / "grpo-tui").mkdir(parents=True)
    (cache / "grpo-tui" / "tiny-model").symlink_to(pretrained_tiny_model)  # the demo's cached model: nothing to build
    tmux.start(
        [
            f"XDG_CACHE_HOME={cache}",
            sys.executable,
            "-m",
            "grpo_tui",
            "demo",
            "--max-steps",
            "4",
            "--runs-dir",
            str(runs_dir),
        ],
        ROOT,
    )
    tmux.wait_screen(lambda s: "COMPLETED" in s and "step 4/4" in s, what="the demo run COMPLETED at step 4/4")
    tmux.send("q")
    assert tmux.wait_exit() == 0
    [run] = [p.name for p in runs_dir.iterdir() if (p / "events.jsonl").exists()]
    # what the command printed after the app left the screen; -J joins the lines the pane wrapped
    said = tmux.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", tmux.session).stdout
    assert f"the demo run {run} is completed; see it again with: grpo-tui watch {run}" in said
