"""A real run on hostile data, watched in a real terminal: the text shows literally and no escape gets out.

The tiny model trains on prompts in a Llama 2 chat template full of markup and escape sequences
(tests/envs/hostile_env.py), whose environment also prints them into trainer.log. The monitor then runs in
tmux with ``set-clipboard on``, so an OSC 52 sequence that reached the terminal would become a paste buffer:
the Completions, Log and Warnings tabs must show the brackets as written, and tmux must have no buffer.
"""

from __future__ import annotations

import shutil
import sys

import pytest

from tools.tmux import Tmux

from ..helpers import ENVS, ROOT, cli, only_run
from .test_tmux import HEIGHT, WIDTH, warnings_shown

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_a_run_on_hostile_prompts_is_shown_literally_in_a_real_terminal(tiny_model, runs_dir):
    result = cli(
        "train",
        "--model",
        tiny_model,
        "--rl-env-module",
        str(ENVS / "hostile_env.py"),
        "--rl-env-class",
        "HostileEnv",
        "--rl-num-generations",
        "4",
        "--batch-size",
        "8",
        "--rl-max-new-tokens",
        "8",
        "--max-steps",
        "3",
        "--runs-dir",
        str(runs_dir),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "\x1b" not in result.stdout and "\x1b" not in result.stderr  # the piped train lines too
    run = only_run(runs_dir)
    assert "\x1b]52" in (run / "trainer.log").read_text()  # the escapes are in the run folder, as written
    assert "\\u001b]52" in (run / "samples.jsonl").read_text(encoding="utf-8")

    tmux = Tmux(width=WIDTH + 40, height=HEIGHT)
    try:
        tmux.start(
            [sys.executable, "-m", "grpo_tui", "watch", run.name, "--runs-dir", str(runs_dir)], ROOT, clipboard=True
        )
        tmux.wait_screen(lambda s: "COMPLETED" in s and "step 3/3" in s, what="the completed run")
        tmux.send("3")
        shown = tmux.wait_screen(lambda s: "[INST]" in s, what="the prompts in the Completions tab")
        assert "<s>[INST] [bold]Hello[/]" in shown
        tmux.send("4")
        # the line whole: the screen clear and cursor home in it cleared nothing before "end of line"
        tmux.wait_screen(
            lambda s: (
                "env log <s>[INST] [bold]Hello[/] [link=https://evil.example]click[/link]" in s
                and "[/INST] end of line" in s
            ),
            what="the environment's lines in the Log tab, literally",
        )
        tmux.send("2")
        tmux.wait_screen(warnings_shown, what="the Warnings tab")
        tmux.send("q")
        assert tmux.wait_exit() == 0
        assert tmux.buffers() == "", "an OSC 52 sequence from the data reached the terminal"
    finally:
        tmux.kill()
