"""bench.eval_cost runs end to end, as bench/README.md says to type it: a round of each side on the pre-trained
tiny model, and its summary (the ratio it is there for). Its figures are measured, not asserted: a benchmark is
not a timed test."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ..helpers import ROOT, scaled

pytestmark = pytest.mark.slow


def test_eval_cost_runs_a_round_and_prints_its_ratio(pretrained_tiny_model, tmp_path):
    done = subprocess.run(
        [
            sys.executable, "-m", "bench.eval_cost", "--steps", "3", "--eval-every", "2", "--rounds", "1",
            "--eval-prompts", "2", "--eval-generations", "1", "--model-dir", pretrained_tiny_model,
            "--work-dir", str(tmp_path),
        ],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=scaled(600),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [line.split() for line in done.stdout.splitlines() if re.match(r"\s+1\s+(eval|no-eval)\s", line)]
    assert sorted(row[1] for row in rows) == ["eval", "no-eval"], done.stdout
    assert {row[1]: int(row[6]) for row in rows} == {"eval": 3, "no-eval": 0}  # at 0, 2 and the last step
    assert re.search(r"training time with evals / without, evals left out: \d+\.\d{3}", done.stdout), done.stdout
