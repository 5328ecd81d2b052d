"""``grpo-tui runs --json`` carries each run's held-out figures: baseline, latest and best of its ranking metric."""

from __future__ import annotations

import json

from ..helpers import cli
from ..run_fixtures import TASK_METRIC, make_eval_run, make_finished_run


def test_runs_json_carries_the_baseline_latest_and_best_eval(runs_dir):
    make_eval_run(runs_dir, "20260101-000000-e7a1ed")
    make_finished_run(runs_dir, "20251231-000000-abcdef", steps=10, with_warnings=False)
    result = cli("runs", "--json", "--runs-dir", str(runs_dir))
    assert result.returncode == 0, result.stderr
    rows = {row["run_id"]: row for row in json.loads(result.stdout)}
    assert rows["20260101-000000-e7a1ed"]["eval"] == {
        "metric": TASK_METRIC,
        "baseline": {"step": 0, "value": 0.3},
        "latest": {"step": 50, "value": 0.1},
        "best": {"step": 20, "value": 0.7},
    }
    assert rows["20251231-000000-abcdef"]["eval"] is None  # no held-out set


def test_the_ranking_metric_follows_keep_best(runs_dir):
    path = make_eval_run(runs_dir)
    config = path / "config.yaml"
    config.write_text(config.read_text() + "keep_best: reward\n")
    row = json.loads(cli("runs", "--json", "--runs-dir", str(runs_dir)).stdout)[0]
    assert row["eval"]["metric"] == "reward"
    assert row["eval"]["best"] == {"step": 50, "value": 0.9}
