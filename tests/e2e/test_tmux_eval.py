"""End to end in a real terminal: ``grpo-tui watch --once`` shows a run's held-out evaluation.

The plain view of a run with evals ends with the held-out panel: each metric's mean at the baseline (step 0),
the latest eval and the best one, with their steps; a run without evals says it has no held-out set. Read off
a tmux pane, as a person at a terminal would see it (the fixtures and the tmux driver are test_tmux.py's).
"""

from __future__ import annotations

import re

from ..helpers import ROOT
from ..run_fixtures import TASK_METRIC, make_eval_run, make_finished_run
from .test_tmux import pytestmark as pytestmark  # skipped where tmux is not installed
from .test_tmux import (
    tmux,  # noqa: F401 (the fixture: the tests take it by name)
    watch_argv,
)


def _row(screen: str, name: str) -> list[str]:
    """The figures of metric ``name`` in the held-out panel (under the run's frame, which has a reward row too)."""
    panel = screen[screen.index("held-out eval") :]
    line = next(line for line in panel.splitlines() if re.match(rf"\s*{re.escape(name)}\s", line))
    return line.split()[1:]


def test_watch_shows_the_baseline_latest_and_best_held_out_figures(runs_dir, tmux):  # noqa: F811
    run = make_eval_run(runs_dir)
    tmux.start([*watch_argv(run.name, runs_dir), "--once"], ROOT)
    assert tmux.wait_exit() == 0
    screen = tmux.screen()
    assert f"held-out eval (best by {TASK_METRIC})" in screen
    assert re.search(r"baseline @0\s+latest @50\s+best @20", screen), screen
    # the task metric peaks at step 20 and ends below its baseline while the held-out reward keeps rising
    assert _row(screen, TASK_METRIC) == ["0.300", "0.100", "0.700"]
    assert _row(screen, "reward") == ["0.200", "0.900", "0.480"]


def test_watch_says_when_a_run_has_no_held_out_set(runs_dir, tmux):  # noqa: F811
    run = make_finished_run(runs_dir, "20260102-000000-abcdef", steps=10)
    tmux.start([*watch_argv(run.name, runs_dir), "--once"], ROOT)
    assert tmux.wait_exit() == 0
    assert "the run has no held-out set" in tmux.screen()
