"""A piped ``grpo-tui watch`` prints one line per step, whatever the width a terminal would have: grep and awk
read it a line at a time."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

from tools.synthetic_runs import log_live, new_run
from trainer_core.contract.config.run_config import RunConfig

from ..helpers import ROOT, scaled

STEPS = 6
VALUES = {
    "reward": 0.5,
    "reward_std": 0.25,
    "kl": 0.01,
    "loss": 0.125,
    "entropy": 0.917,
    "completions/mean_length": 17.4,
    "completions/clipped_ratio": 0.0,
    "grad_norm": 1.5,
    "learning_rate": 5e-5,
}


def test_a_piped_watch_prints_each_step_on_one_line_at_any_width(tmp_path):
    runs = tmp_path / "runs"
    folder = new_run(runs, "20260101-000000-aaaaaa", RunConfig(model="m", rl_env_module="e.py", rl_env_class="E"))
    started = threading.Event()
    go = threading.Event()

    def ready() -> None:
        started.set()
        go.wait(scaled(60))

    trainer = threading.Thread(target=log_live, args=(folder, STEPS, 4.0, lambda step: dict(VALUES), ready))
    trainer.start()
    try:
        assert started.wait(scaled(30))
        env = {**os.environ, "COLUMNS": "40", "LINES": "10"}
        watch = subprocess.Popen(
            [sys.executable, "-m", "grpo_tui", "watch", folder.run_id, "--runs-dir", str(runs)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        go.set()
        out, err = watch.communicate(timeout=scaled(120))
    finally:
        go.set()
        trainer.join()
    assert watch.returncode == 0, err
    lines = out.splitlines()
    step_lines = [line for line in lines if line.startswith("step ")]
    steps = [int(line.split()[1].split("/")[0]) for line in step_lines]
    assert len(steps) >= 2 and steps == list(range(STEPS - len(steps) + 1, STEPS + 1)), out
    for line in step_lines:
        assert len(line) > 40, line  # wider than the terminal it would have had, and still one line
        assert "0.917" in line and "17.4" in line, out
    # the first frame's lines are whole too: the header's step count, the held-out line
    assert any(re.search(rf"running  step [0-9-]+/{STEPS}  elapsed", line) for line in lines), out
    assert "held-out: none (the run has no held-out set; see docs/evaluation.md)" in lines, out
