"""A setting far outside its usual range (an lr of 4.0: a lost keystroke of 4e-5) is valid, so the run starts;
the command line warns first, as the form asks first."""

from __future__ import annotations

from ..helpers import cli, only_run, pattern_args


def test_train_warns_of_an_lr_far_outside_its_usual_range_and_runs(tiny_model, runs_dir):
    done = cli(*pattern_args(tiny_model, runs_dir, "--lr", "4.0", "--max-steps", "1", "--save-steps", "100"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "warning: lr is 4, more than 1000 times above its usual range" in done.stderr, done.stderr
    assert only_run(runs_dir).exists()
    quiet = cli(
        *pattern_args(tiny_model, runs_dir / "usual", "--lr", "5e-6", "--max-steps", "1", "--save-steps", "100")
    )
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert "usual range" not in quiet.stderr
