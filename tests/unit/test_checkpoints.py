"""The checkpoint verifier on hand-made folders, and what resume and merge do with what it finds."""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import pytest

from grpo_tui.services.lifecycle.supervisor import plan_resume
from trainer_core.commands.merge import MergeError, merge_source
from trainer_core.contract.config import resume_plan as resuming
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.checkpoints import (
    TORN_NOTE,
    check_checkpoint,
    check_checkpoints,
    complete_checkpoints,
    move_aside,
    newest,
)
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import Metrics, RunFinished
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status
from trainer_core.training.run_context import RunContext

from ..helpers import EXAMPLES


def safetensors(path: Path, nbytes: int = 16, cut: int = 0) -> None:
    header = json.dumps(
        {"__metadata__": {"format": "pt"}, "w": {"dtype": "F32", "shape": [nbytes // 4], "data_offsets": [0, nbytes]}}
    ).encode()
    data = struct.pack("<Q", len(header)) + header + b"\0" * nbytes
    path.write_bytes(data[: len(data) - cut])


def torch_file(path: Path, cut: int = 0) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{path.stem}/data.pkl", b"\x80\x02}q\x00.")
        archive.writestr(f"{path.stem}/version", b"3\n")
    if cut:
        path.write_bytes(path.read_bytes()[:-cut])


def checkpoint(root: Path, step: int, *, weights: str = "full", state_step: int | None = None) -> Path:
    path = root / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step if state_step is None else state_step}))
    if weights == "full":
        safetensors(path / "model.safetensors")
    elif weights == "lora":
        safetensors(path / "adapter_model.safetensors")
        (path / "adapter_config.json").write_text("{}")
    elif weights == "sharded":
        for shard in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
            safetensors(path / shard)
        (path / "model.safetensors.index.json").write_text(
            json.dumps(
                {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
            )
        )
    elif weights == "bin":
        torch_file(path / "pytorch_model.bin")
    torch_file(path / "optimizer.pt")
    torch_file(path / "scheduler.pt")
    return path


@pytest.mark.parametrize("weights", ["full", "lora", "sharded", "bin"])
def test_a_whole_checkpoint_is_complete(tmp_path, weights):
    check = check_checkpoint(checkpoint(tmp_path, 4, weights=weights))
    assert check.complete and check.has_model and check.step == 4 and check.why() == "complete"


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda p: (p / "trainer_state.json").unlink(), "trainer_state.json is missing"),
        (lambda p: (p / "trainer_state.json").write_text('{"global_st'), "trainer_state.json is truncated or damaged"),
        (lambda p: (p / "trainer_state.json").write_text('{"global_step": 3}'), "records step 3, not 4"),
        (lambda p: (p / "model.safetensors").unlink(), "no model weights"),
        (lambda p: safetensors(p / "model.safetensors", cut=5), "model.safetensors is truncated"),
        (lambda p: (p / "model.safetensors").write_bytes(b"\x07\x00"), "model.safetensors is truncated (2 bytes)"),
        (lambda p: (p / "model.safetensors").write_bytes(struct.pack("<Q", 4) + b"{no}"), "has a damaged header"),
        (lambda p: (p / "model.safetensors").write_bytes(struct.pack("<Q", 1 << 40)), "is truncated (header"),
    ],
)
def test_a_damaged_trainer_state_or_model_is_named(tmp_path, damage, why):
    path = checkpoint(tmp_path, 4)
    damage(path)
    check = check_checkpoint(path)
    assert not check.complete and not check.has_model and why in check.why()
    assert check.describe().startswith("checkpoint-4: ")


def test_damaged_shards_adapters_and_torch_files_are_named(tmp_path):
    sharded = checkpoint(tmp_path, 1, weights="sharded")
    (sharded / "model-00002-of-00002.safetensors").unlink()
    assert "model-00002-of-00002.safetensors is missing" in check_checkpoint(sharded).why()
    lora = checkpoint(tmp_path, 2, weights="lora")
    (lora / "adapter_config.json").unlink()
    assert check_checkpoint(lora).why() == "adapter_config.json is missing"
    binary = checkpoint(tmp_path, 3, weights="bin")
    torch_file(binary / "pytorch_model.bin", cut=10)
    assert "pytorch_model.bin is truncated or not a torch file" in check_checkpoint(binary).why()


def test_a_missing_or_cut_optimizer_keeps_the_weights_mergeable_but_not_resumable(tmp_path):
    path = checkpoint(tmp_path, 4)
    (path / "optimizer.pt").unlink()
    torch_file(path / "scheduler.pt", cut=3)
    check = check_checkpoint(path)
    assert check.has_model and not check.complete
    assert (
        check.why()
        == "optimizer.pt is missing; scheduler.pt is truncated or not a torch file ("
        + f"{(path / 'scheduler.pt').stat().st_size} bytes)"
    )
    with zipfile.ZipFile(path / "optimizer.pt", "w") as archive:
        archive.writestr("junk", b"x")
    assert "optimizer.pt is not a torch file" in check_checkpoint(path).why()


def test_newest_complete_and_what_it_passed_over(tmp_path):
    for step in (2, 4, 6):
        checkpoint(tmp_path, step)
    (tmp_path / "checkpoint-6" / "trainer_state.json").unlink()
    (tmp_path / "checkpoint-2" / "optimizer.pt").unlink()
    (tmp_path / "checkpoint-x").mkdir()
    (tmp_path / "checkpoint-8").write_text("a file, not a folder")
    checks = check_checkpoints(tmp_path)
    assert [c.step for c in checks] == [2, 4, 6]
    picked, skipped = newest(checks)
    assert picked.step == 4 and [c.step for c in skipped] == [6]
    assert complete_checkpoints(tmp_path) == [tmp_path / "checkpoint-4"]
    assert newest(checks[:1])[0] is None and newest(checks[:1], for_resume=False)[0].step == 2


def test_moved_aside_checkpoints_are_kept_out_of_the_trainers_sight(tmp_path):
    folder = RunFolder.create(tmp_path, "run")
    checkpoint(folder.checkpoints_dir, 4)
    torn = checkpoint(folder.checkpoints_dir, 6)
    (torn / "trainer_state.json").unlink()
    first = move_aside(check_checkpoint(torn), now=0)
    checkpoint(folder.checkpoints_dir, 6)
    (torn / "trainer_state.json").unlink()
    second = move_aside(check_checkpoint(torn), now=0)
    assert first.parent == second.parent == folder.checkpoints_dir / "torn" and first != second
    assert first.name == "checkpoint-6.19700101-000000" and (first / "model.safetensors").exists()
    assert json.loads((first / TORN_NOTE).read_text())["problems"][0].startswith("trainer_state.json is missing")
    # the Trainer rotates and finds its last checkpoint with this glob; RunFolder lists the same
    assert [p.name for p in folder.checkpoints_dir.glob("checkpoint-*")] == ["checkpoint-4"]
    assert [p.name for p in folder.checkpoints()] == ["checkpoint-4"]


def ended_run(tmp_path: Path, status: Status, last: int, *steps: int) -> RunFolder:
    folder = RunFolder.create(tmp_path / "runs", "run")
    folder.save_config(
        RunConfig(
            model="org/model", rl_env_module=str(EXAMPLES / "pattern_env.py"), rl_env_class="PatternEnv", max_steps=last
        )
    )
    folder.write_state(run_id="run", status=Status.STARTING)
    folder.write_state(
        status=status, last_step=last, exit_reason=None if status is Status.COMPLETED else "why", ended=1.0
    )
    with EventWriter(folder.events_file) as writer:
        for step in range(1, last + 1):
            writer.emit(Metrics(step=step, values={"reward": 0.1}))
        writer.emit(RunFinished(status=status, step=last))
    for step in steps:
        checkpoint(folder.checkpoints_dir, step)
    return folder


def test_merge_takes_the_newest_whole_checkpoint_and_refuses_a_torn_one(tmp_path):
    folder = ended_run(tmp_path, Status.STOPPED, 6, 2, 4, 6)
    (folder.checkpoints_dir / "checkpoint-6" / "trainer_state.json").unlink()
    notes: list[str] = []
    assert merge_source(folder, notes=notes) == folder.checkpoints_dir / "checkpoint-4"
    assert notes == ["skipped checkpoint-6: trainer_state.json is missing (the save did not finish)"]
    with pytest.raises(
        MergeError,
        match=r"checkpoint-6 of run run is incomplete: trainer_state.json is missing.*"
        r"Checkpoints that can be merged: 2, 4\.",
    ):
        merge_source(folder, 6)
    final = folder.path / "final"
    final.mkdir()
    (final / "config.json").write_text("{}")
    assert merge_source(folder) == folder.checkpoints_dir / "checkpoint-4"  # a stopped leg: newer than final/
    folder.write_state(status=Status.STARTING)
    folder.write_state(status=Status.COMPLETED)
    assert merge_source(folder) == final


def test_a_refused_resume_writes_nothing(tmp_path):
    folder = ended_run(tmp_path, Status.COMPLETED, 5, 4, 5)
    before = (folder.state_file.read_bytes(), folder.config_file.read_bytes())
    with pytest.raises(ConfigError, match="is completed at step 5; to continue it, pass --max-steps N above 5"):
        plan_resume(folder)
    with pytest.raises(ConfigError, match="--max-steps 5 is not above step 5 of checkpoint-5"):
        plan_resume(folder, max_steps=5)
    for name in ("checkpoint-4", "checkpoint-5"):
        (folder.checkpoints_dir / name / "trainer_state.json").unlink()
    with pytest.raises(ConfigError, match=r"no complete checkpoint to resume from .checkpoint-5: trainer_state"):
        plan_resume(folder, max_steps=9)
    assert (folder.state_file.read_bytes(), folder.config_file.read_bytes()) == before
    assert [p.name for p in folder.checkpoints()] == ["checkpoint-4", "checkpoint-5"]


def test_a_resume_that_cannot_be_written_puts_the_run_back(tmp_path, monkeypatch):
    folder = ended_run(tmp_path, Status.STOPPED, 5, 4, 5)
    (folder.checkpoints_dir / "checkpoint-5" / "trainer_state.json").unlink()
    before = (folder.read_state(), folder.config_file.read_bytes())

    def full(check):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(resuming, "move_aside", full)
    with pytest.raises(ConfigError, match=r"No space left on device.*left as it was"):
        plan_resume(folder, max_steps=9)
    assert (folder.read_state(), folder.config_file.read_bytes()) == before and folder.status() is Status.STOPPED


def test_a_resume_records_the_run_before_it_and_a_failed_leg_keeps_the_step(tmp_path):
    folder = ended_run(tmp_path, Status.COMPLETED, 5, 4, 5)
    (folder.checkpoints_dir / "checkpoint-5" / "trainer_state.json").unlink()
    plan = plan_resume(folder, max_steps=9)
    assert plan.checkpoint.step == 4 and plan.message.splitlines() == [
        "resuming run run (completed at step 5) from checkpoints/checkpoint-4 to step 9; step 5 is trained again",
        f"skipped checkpoint-5: trainer_state.json is missing (the save did not finish) (moved to "
        f"{plan.skipped[0]['moved_to']})",
    ]
    state = folder.read_state()
    assert state["status"] == "starting" and state["resume_from"] == "checkpoints/checkpoint-4"
    assert state["before_resume"] == {
        "status": "completed",
        "last_step": 5,
        "exit_reason": None,
        "ended": 1.0,
        "max_steps": None,
    }
    assert state["restarts"] == 1 and state["resume_skipped"] == plan.skipped
    assert RunConfig.load(folder.config_file).max_steps == 9

    run = RunContext(RunConfig.load(folder.config_file), folder, echo=False)
    run.begin_resume(state["resume_from"])
    assert run.last_step == 5  # the step on record, not the checkpoint's 4 and never 0
    run.finish(Status.FAILED, "RuntimeError: cannot load")
    run.close()
    state = folder.read_state()
    assert state["status"] == "failed" and state["last_step"] == 5
    assert state["exit_reason"] == "resume from checkpoints/checkpoint-4 failed: RuntimeError: cannot load"
    assert state["before_resume"]["status"] == "completed"
