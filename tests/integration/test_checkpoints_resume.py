"""Faults that lose work: torn checkpoints (planted, and cut by a SIGKILL during a save) are skipped by
resume and merge; a completed run continues to a higher --max-steps; a resume that fails keeps the run's
history. Real training of the tiny model through the CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import zipfile
from pathlib import Path

import psutil

from grpo_tui.services.lifecycle.supervisor import run_processes
from trainer_core.contract.run.checkpoints import check_checkpoint, check_checkpoints
from trainer_core.contract.run.events import Checkpoint, HealthWarning, Metrics, RunFinished, RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

from ..helpers import ENVS, cli, events_of, only_run, pattern_args, wait_for
from .test_supervisor import launch


def train_run(tiny_model, runs_dir, *flags) -> RunFolder:
    result = cli(*pattern_args(tiny_model, runs_dir, "--rl-max-new-tokens", "8", *flags))
    assert result.returncode == 0, result.stdout + result.stderr
    return RunFolder(only_run(runs_dir))


def resume(folder: RunFolder, *flags):
    return cli("train", "--resume", folder.run_id, "--runs-dir", str(folder.path.parent), *flags)


def legs(folder: RunFolder) -> list[list[int]]:
    """The metrics steps of each start of the run (one list per ``run_started``)."""
    out: list[list[int]] = []
    for event in events_of(folder.path):
        if isinstance(event, RunStarted):
            out.append([])
        elif isinstance(event, Metrics):
            out[-1].append(event.step)
    return out


def names(folder: RunFolder) -> list[str]:
    return [p.name for p in folder.checkpoints()]


def plant_torn(
    folder: RunFolder, good: int, step: int, *, drop: str | None = None, truncate: str | None = None
) -> Path:
    """A copy of checkpoint-``good`` as checkpoint-``step``, with a file dropped or cut in half."""
    path = folder.checkpoints_dir / f"checkpoint-{step}"
    shutil.copytree(folder.checkpoints_dir / f"checkpoint-{good}", path)
    state = json.loads((path / "trainer_state.json").read_text())
    (path / "trainer_state.json").write_text(json.dumps({**state, "global_step": step}))
    if drop:
        (path / drop).unlink()
    if truncate:
        os.truncate(path / truncate, (path / truncate).stat().st_size // 2)
    return path


def test_planted_torn_checkpoints_are_skipped_by_merge_and_resume(tiny_model, runs_dir, tmp_path):
    folder = train_run(tiny_model, runs_dir, "--max-steps", "5", "--save-steps", "2")
    assert names(folder) == ["checkpoint-2", "checkpoint-4", "checkpoint-5"]  # the last step is always saved
    assert all(c.complete for c in check_checkpoints(folder.checkpoints_dir))
    plant_torn(folder, 5, 6, drop="trainer_state.json")
    plant_torn(folder, 5, 7, truncate="model.safetensors")

    refused = cli(
        "merge", folder.run_id, "--runs-dir", str(runs_dir), "--output", str(tmp_path / "m7"), "--checkpoint", "7"
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "checkpoint-7" in refused.stderr and "model.safetensors is truncated" in refused.stderr
    final = folder.path / "final"
    final.rename(tmp_path / "final-aside")  # without a final model, merge takes the newest whole checkpoint
    merged = cli("merge", folder.run_id, "--runs-dir", str(runs_dir), "--output", str(tmp_path / "merged"))
    (tmp_path / "final-aside").rename(final)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "checkpoint-5 -> " in merged.stdout
    assert "skipped checkpoint-7: model.safetensors is truncated" in merged.stderr
    assert "skipped checkpoint-6: trainer_state.json is missing" in merged.stderr

    result = resume(folder, "--max-steps", "8")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "from checkpoints/checkpoint-5 to step 8" in result.stderr
    assert "skipped checkpoint-6: trainer_state.json is missing" in result.stderr
    assert "skipped checkpoint-7: model.safetensors is truncated" in result.stderr
    assert legs(folder) == [[1, 2, 3, 4, 5], [6, 7, 8]]
    assert "step 6/8" in result.stdout and "step 1/" not in result.stdout  # only the new leg is printed
    events = events_of(folder.path)
    second = [e for e in events if isinstance(e, RunStarted)][1]
    assert (second.resumed_from, second.restart) == ("checkpoints/checkpoint-5", 1)
    assert [s["name"] for s in second.skipped_checkpoints] == ["checkpoint-6", "checkpoint-7"]
    [torn] = [e for e in events if isinstance(e, HealthWarning) and e.rule == "torn_checkpoint"]
    assert torn.step == 5 and "checkpoint-6" in torn.message and "checkpoint-7" in torn.message
    moved = sorted(p.name.split(".")[0] for p in (folder.checkpoints_dir / "torn").iterdir())
    assert moved == ["checkpoint-6", "checkpoint-7"]
    assert names(folder) == ["checkpoint-2", "checkpoint-4", "checkpoint-5", "checkpoint-6", "checkpoint-8"]
    assert all(c.complete for c in check_checkpoints(folder.checkpoints_dir))
    state = folder.read_state()
    assert state["status"] == "completed" and state["last_step"] == 8 and state["restarts"] == 1
    assert state["before_resume"]["status"] == "completed" and state["before_resume"]["last_step"] == 5


def test_a_checkpoint_cut_by_a_sigkill_during_its_save_is_skipped_by_resume(tiny_model, runs_dir):
    handle = launch(
        tiny_model,
        runs_dir,
        "--max-steps",
        "6",
        "--save-steps",
        "2",
        "--rl-max-new-tokens",
        "8",
        env_module=str(ENVS / "slow_save_env.py"),
        env_class="SlowSavePattern",
    )
    cut = handle.folder.checkpoints_dir / "checkpoint-4"
    wait_for(
        lambda: (cut / "model.safetensors").exists() and not (cut / "trainer_state.json").exists(),
        timeout=180,
        interval=0.02,
    )
    procs = run_processes(handle.folder)
    for proc in procs:
        proc.send_signal(signal.SIGKILL)
    psutil.wait_procs(procs, timeout=30)
    assert not check_checkpoint(cut).complete and check_checkpoint(cut.parent / "checkpoint-2").complete
    assert "trainer_state.json is missing" in check_checkpoint(cut).why()

    result = resume(handle.folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "skipped checkpoint-4: trainer_state.json is missing" in result.stderr
    assert "from checkpoints/checkpoint-2 to step 6" in result.stderr
    first, second = legs(handle.folder)
    assert first[:4] == [1, 2, 3, 4] and second == [3, 4, 5, 6]
    assert handle.status() is Status.COMPLETED
    [moved] = (handle.folder.checkpoints_dir / "torn").iterdir()
    assert moved.name.startswith("checkpoint-4.") and (moved / "model.safetensors").exists()
    assert check_checkpoint(cut).complete  # the resumed leg saved step 4 again, whole


def test_a_completed_3_step_run_resumed_to_6_logs_steps_4_to_6_in_the_same_folder(tiny_model, runs_dir):
    folder = train_run(tiny_model, runs_dir, "--max-steps", "3")
    assert names(folder) == ["checkpoint-3"] and folder.status() is Status.COMPLETED
    first_final = (folder.path / "final" / "model.safetensors").read_bytes()

    refused = resume(folder, "--max-steps", "3")
    assert refused.returncode == 2 and "--max-steps 3 is not above step 3" in refused.stderr
    assert folder.status() is Status.COMPLETED

    result = resume(folder, "--max-steps", "6")
    assert result.returncode == 0, result.stdout + result.stderr
    assert legs(folder) == [[1, 2, 3], [4, 5, 6]]
    assert only_run(runs_dir) == folder.path
    finished = [e for e in events_of(folder.path) if isinstance(e, RunFinished)]
    assert [(e.status, e.step) for e in finished] == [(Status.COMPLETED, 3), (Status.COMPLETED, 6)]
    finals = [e.step for e in events_of(folder.path) if isinstance(e, Checkpoint) and e.final]
    assert finals == [3, 6]
    assert (folder.path / "final" / "model.safetensors").read_bytes() != first_final  # replaced by the new leg
    assert not (folder.path / ".final-partial").exists() and not (folder.path / ".final-old").exists()
    assert folder.read_state()["max_steps"] == 6 and folder.status() is Status.COMPLETED


def unloadable(path: Path) -> None:
    """A torch file that passes every check the standard library can make and that torch cannot load."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("optimizer/data.pkl", b"not a pickle")


def test_a_resume_that_fails_keeps_the_run_history(tiny_model, runs_dir):
    folder = train_run(tiny_model, runs_dir, "--max-steps", "5", "--save-steps", "2")
    final = (folder.path / "final" / "model.safetensors").read_bytes()
    (folder.checkpoints_dir / "checkpoint-5" / "trainer_state.json").unlink()
    unloadable(folder.checkpoints_dir / "checkpoint-4" / "optimizer.pt")

    result = resume(folder, "--max-steps", "7")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "from checkpoints/checkpoint-4 to step 7" in result.stderr and "skipped checkpoint-5" in result.stderr
    events = events_of(folder.path)
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert [(e.status, e.step) for e in finished] == [(Status.COMPLETED, 5), (Status.FAILED, 5)]
    assert finished[-1].reason.startswith("resume from checkpoints/checkpoint-4 failed: ")
    assert legs(folder) == [[1, 2, 3, 4, 5], []]
    state = folder.read_state()
    assert state["status"] == "failed" and state["last_step"] == 5
    assert state["exit_reason"].startswith("resume from checkpoints/checkpoint-4 failed")
    assert state["before_resume"] == {
        **state["before_resume"],
        "status": "completed",
        "last_step": 5,
        "exit_reason": None,
    }
    assert (folder.path / "final" / "model.safetensors").read_bytes() == final  # the first leg's model stays
    assert "run failed at step 5 (resume from checkpoints/checkpoint-4 failed" in result.stdout
