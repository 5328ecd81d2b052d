"""A resume that changes settings (``train --resume RUN --checkpoint N --set KEY=VALUE``): the new learning rate
is the one the optimizer and the logged metrics use after the checkpoint's scheduler is restored, config.yaml
and ``grpo-tui export`` give the new settings, the change and the rewind are recorded; a setting a resume may
not change is refused with exit 2 and nothing written. Real training of the tiny model through the CLI."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
import yaml

from trainer_core.contract.run.events import Metrics, Rewound, RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

from ..helpers import cli, events_of, only_run, pattern_args

FIRST_LR, NEW_LR = 1e-5, 3e-5


@pytest.fixture(scope="module")
def trained_run(tiny_model, tmp_path_factory) -> Path:
    """A completed 4-step run with checkpoints at steps 2 and 4 and a linear schedule, shared: each test
    works on its own copy (``copy_of``)."""
    runs_dir = tmp_path_factory.mktemp("resume-set-runs")
    result = cli(
        *pattern_args(tiny_model, runs_dir, "--rl-max-new-tokens", "8", "--max-steps", "4", "--save-steps", "2"),
        "--lr",
        str(FIRST_LR),
        "--scheduler",
        "linear",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return only_run(runs_dir)


def copy_of(run: Path, runs_dir: Path) -> RunFolder:
    runs_dir.mkdir(parents=True, exist_ok=True)
    return RunFolder(Path(shutil.copytree(run, runs_dir / run.name)))


def resume(folder: RunFolder, *flags: str):
    return cli("train", "--resume", folder.run_id, "--runs-dir", str(folder.path.parent), *flags)


def folder_bytes(folder: RunFolder) -> dict[str, str]:
    return {
        str(p.relative_to(folder.path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.path.rglob("*"))
        if p.is_file()
    }


def learning_rates(folder: RunFolder) -> list[dict[int, float]]:
    """The ``learning_rate`` logged at each step, one mapping per leg (``run_started``)."""
    legs: list[dict[int, float]] = []
    for event in events_of(folder.path):
        if isinstance(event, RunStarted):
            legs.append({})
        elif isinstance(event, Metrics) and "learning_rate" in event.values:
            legs[-1][event.step] = event.values["learning_rate"]
    return legs


def test_resume_with_a_new_lr_and_kl_coef_trains_with_them_and_records_the_change(trained_run, tmp_path):
    folder = copy_of(trained_run, tmp_path / "runs")
    result = resume(folder, "--checkpoint", "2", "--set", f"lr={NEW_LR}", "--set", "beta=0.05")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"lr: {FIRST_LR!r} -> {NEW_LR!r} (revision 1)" in result.stderr
    assert folder.status() is Status.COMPLETED

    first, second = learning_rates(folder)
    assert sorted(first) == [1, 2, 3, 4] and sorted(second) == [3, 4]
    assert second[3] > 0  # the schedule goes on from the checkpoint's step, now with the new peak
    assert second[3] == pytest.approx(first[3] * NEW_LR / FIRST_LR, rel=1e-6)
    assert second[4] == pytest.approx(first[4] * NEW_LR / FIRST_LR, abs=1e-12)
    # the optimizer's param groups, read when training began, hold the lr step 3 then trains and logs with
    log = (folder.path / "trainer.log").read_text()
    assert f"it goes on at {NEW_LR:g} (optimizer lr {second[3]:g} at step 2)" in log

    config = yaml.safe_load(folder.config_file.read_text())
    assert config["lr"] == NEW_LR and config["rl_kl_coef"] == 0.05
    changes = {"lr": {"from": FIRST_LR, "to": NEW_LR}, "rl_kl_coef": {"from": 0.1, "to": 0.05}}
    events = events_of(folder.path)
    rewinds = [e for e in events if isinstance(e, Rewound)]
    assert len(rewinds) == 1
    rewind = rewinds[0]
    assert (rewind.from_step, rewind.to_step, rewind.checkpoint, str(rewind.by)) == (4, 2, "checkpoint-2", "user")
    assert rewind.changes == changes and rewind.revision == 1 and rewind.reason is None and rewind.rule is None
    starts = [e for e in events if isinstance(e, RunStarted)]
    assert events.index(rewind) == events.index(starts[1]) - 1  # written just before the new leg's run_started
    assert (starts[0].revision, starts[0].changes) == (None, None)
    assert (starts[1].revision, starts[1].changes) == (1, changes)
    state = folder.read_state()
    assert state["revision"] == 1 and state.get("resume_change") is None  # recorded once, in the events

    exported = cli("export", folder.run_id, "--runs-dir", str(folder.path.parent), "--format", "grpo-tui")
    assert exported.returncode == 0, exported.stderr
    assert yaml.safe_load(exported.stdout)["lr"] == NEW_LR


def test_settings_a_resume_may_not_change_are_refused_with_nothing_written(trained_run, tmp_path):
    folder = copy_of(trained_run, tmp_path / "runs")
    before = folder_bytes(folder)
    for words, said in [
        (["--set", "batch_size=16"], "a resume may not change batch_size: it changes the batch"),
        (["--set", "model=other"], "a resume may not change model: it changes the model"),
        (["--set", "scheduler=constant"], "a resume may not change scheduler"),
        (["--set", "lr=-1"], "lr must be > 0"),
        (["--set", "lr=fast"], "--set lr=fast: 'fast' is not a number"),
        (["--set", "lernrate=1e-5"], "'lernrate' is not a setting"),
        (["--set", "lr"], "--set takes KEY=VALUE"),
    ]:
        result = resume(folder, "--checkpoint", "2", *words)
        assert result.returncode == 2, (words, result.stdout + result.stderr)
        assert said in result.stderr, (words, result.stderr)
        assert folder_bytes(folder) == before, words
    for command in ("train", "launch"):
        refused = cli(command, "--model", "m", "--set", "lr=1e-5", "--runs-dir", str(tmp_path / "new"))
        assert refused.returncode == 2 and "use it with --resume RUN" in refused.stderr
    assert not (tmp_path / "new").exists() or not any((tmp_path / "new").iterdir())
    rollback = cli("rollback", folder.run_id, "--runs-dir", str(folder.path.parent), "--to", "2", "--set", "seed=1")
    assert rollback.returncode == 2 and "a resume may not change seed" in rollback.stderr
    assert folder_bytes(folder) == before
