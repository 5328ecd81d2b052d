"""An agentic run in a real terminal: a few real steps of the hotel agent, then ``grpo-tui watch`` in tmux
shows the tool charts, and Enter on an episode in the Completions tab opens its transcript with the tool
calls and what each tool answered."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from tools.tmux import Tmux

from ..helpers import ENVS, ROOT, cli, only_run

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]


@pytest.fixture
def tmux():
    server = Tmux(width=140, height=45)
    try:
        yield server
    finally:
        server.kill()


def test_a_transcript_opens_from_the_completions_tab_and_the_tool_charts_show(pretrained_tiny_model, runs_dir, tmux):
    done = cli(
        "train",
        "--model",
        pretrained_tiny_model,
        "--rl-env-module",
        str(ENVS / "agent_tools_env.py"),
        "--rl-env-class",
        "ToolHotel",
        "--batch-size",
        "16",
        "--rl-max-new-tokens",
        "96",
        "--max-tool-calls",
        "3",
        "--rl-kl-coef",
        "0",
        "--max-steps",
        "3",
        "--samples-per-step",
        "16",
        "--runs-dir",
        str(runs_dir),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    run = only_run(runs_dir)
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    newest_first = samples[::-1]
    row = next(i for i, s in enumerate(newest_first) if any(t.get("tool") and "result" in t for t in s["turns"]))
    call = next(t for t in newest_first[row]["turns"] if t.get("tool") and "result" in t)

    tmux.start([sys.executable, "-m", "grpo_tui", "watch", run.name, "--runs-dir", str(runs_dir)], ROOT)
    tmux.wait_screen(lambda s: "COMPLETED" in s and "─ tools/call_frequency" in s, what="the tool chart")
    tmux.send("m")
    tmux.wait_screen(lambda s: "─ tools/failure_frequency" in s, what="the next tool chart after m")
    tmux.send("3")
    tmux.wait_screen(lambda s: "tool call" in s, what="the Completions tab with its episodes")  # its table focused
    for _ in range(row):
        tmux.send("Down")
    tmux.send("Enter")
    tmux.wait_screen(
        lambda s: f"→ call {call['tool']}(" in s and f"← {call['result'][:40]}" in s,
        what="the transcript: the newest episode's tool call and its result",
    )
    tmux.send("Escape")
    tmux.wait_screen(lambda s: "→ call" not in s and "tool call" in s, what="back on the Completions tab")
    tmux.send("q")
    assert tmux.wait_exit() == 0
