"""bench/ is a package of benchmarks that each run as a module, with no path tricks: what the README says to
type (``python -m bench.NAME``) works from the checkout's root."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = ("app", "chart", "runs_list", "train_vs_trl", "step_overhead", "health_false_alarms", "eval_cost")


def test_no_bench_file_edits_the_import_path():
    offenders = [p.name for p in (ROOT / "bench").glob("*.py") if re.search(r"sys\.path\b", p.read_text())]
    assert not offenders, offenders


def test_every_bench_module_is_small():
    sizes = {p.name: len(p.read_text().splitlines()) for p in (ROOT / "bench").glob("*.py")}
    assert all(n <= 300 for n in sizes.values()), sizes


@pytest.mark.parametrize("name", ENTRIES)
def test_each_benchmark_runs_as_a_module(name):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{name}", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "usage:" in done.stdout, done.stdout + done.stderr
    assert f"python -m bench.{name}" in (ROOT / "bench" / "README.md").read_text()
