"""``--checkpoint best|final|last|STEP`` where a checkpoint is chosen: merge, export and resume pick the ledger's
entry (run/ledger.py), and refuse what cannot serve, naming what there is."""

from __future__ import annotations

import pytest
import yaml

from trainer_core.commands.merge import MergeError, merge_source
from trainer_core.contract.config.resume_plan import choose_checkpoint
from trainer_core.contract.config.run_config import ConfigError
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.ledger import read_ledger, resolve_checkpoint
from trainer_core.contract.run.status import Status

from ..helpers import cli
from ..run_fixtures import make_eval_run


@pytest.fixture
def run(tmp_path):
    return make_eval_run(tmp_path / "runs")


def test_the_ledger_marks_the_best_by_the_held_out_metric_not_the_last(run):
    marks = {e.name: e.marks for e in read_ledger(run)}
    assert "best" in marks["checkpoint-20"] and "last" in marks["checkpoint-50"] and "final" in marks["final"]
    assert resolve_checkpoint(run, "best").name == "checkpoint-20"
    assert resolve_checkpoint(run, "30").name == "checkpoint-30"
    with pytest.raises(ValueError, match="no complete checkpoint at step 35; it has: checkpoint-10"):
        resolve_checkpoint(run, "35")
    with pytest.raises(ValueError, match="takes best, final, last or a step number"):
        resolve_checkpoint(run, "newest")


def test_merge_takes_the_checkpoint_asked_for(run):
    folder = RunFolder(run)
    assert merge_source(folder, "best").name == "checkpoint-20"
    assert merge_source(folder, "final").name == "final"
    assert merge_source(folder, "40").name == "checkpoint-40"
    with pytest.raises(MergeError, match="has no checkpoint 45"):
        merge_source(folder, "45")


def test_resume_from_the_best_checkpoint_and_never_from_final(run):
    plan, config = choose_checkpoint(RunFolder(run), Status.COMPLETED, 80, "best")
    assert plan.checkpoint.name == "checkpoint-20" and config.max_steps == 80
    assert "steps 21-50 are trained again" in plan.message
    with pytest.raises(ConfigError, match="without the optimizer and scheduler a resume needs"):
        choose_checkpoint(RunFolder(run), Status.COMPLETED, 80, "final")


def test_export_starts_from_the_checkpoint_asked_for(run):
    result = cli("export", str(run), "--format", "grpo-tui", "--checkpoint", "best")
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout)["model"] == str((run / "checkpoints" / "checkpoint-20").resolve())
    missing = cli("export", str(run), "--format", "grpo-tui", "--checkpoint", "7")
    assert missing.returncode == 2 and "no complete checkpoint at step 7" in missing.stderr


def test_checkpoint_without_resume_is_refused(tmp_path):
    result = cli("train", "--model", "m", "--rl-env-module", "x.py", "--rl-env-class", "X", "--checkpoint", "best",
                 "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert result.returncode == 2 and "use it with --resume RUN" in result.stderr
