"""Disk space without a disk to fill: the estimate on hand-made model folders, the preflight's verdicts and
refusal, the classification of failed writes, the watcher's rules and the event writer after a failed write."""

from __future__ import annotations

import errno
import json
import struct
from pathlib import Path

import pytest

import trainer_core.contract.config.disk_estimate as disk_estimate
import trainer_core.contract.run.disk as disk
from grpo_tui.services.catalog.watch_rules import disk_space_warning
from trainer_core.contract.config.disk_estimate import estimate, lora_parameters, model_size, preflight, require_room
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.health.monitor import Thresholds
from trainer_core.contract.run.crash import classify_crash
from trainer_core.contract.run.disk import DiskFault, Usage, disk_fault, fault_from_log, make_reserve, release_reserve
from trainer_core.contract.run.event_log import EventTail, EventWriter
from trainer_core.contract.run.events import Error, Metrics, RunStarted
from trainer_core.contract.run.severity import Severity

MiB = 1024 * 1024
# a two-layer decoder: embeddings 100x16 (tied), q/k/v/o 16x16, mlp 32x16 / 16x32, norms 16
TENSORS = {"model.embed_tokens.weight": [100, 16], "model.norm.weight": [16]}
for _i in range(2):
    for _name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        TENSORS[f"model.layers.{_i}.self_attn.{_name}.weight"] = [16, 16]
    TENSORS[f"model.layers.{_i}.mlp.gate_proj.weight"] = [32, 16]
    TENSORS[f"model.layers.{_i}.mlp.up_proj.weight"] = [32, 16]
    TENSORS[f"model.layers.{_i}.mlp.down_proj.weight"] = [16, 32]
    TENSORS[f"model.layers.{_i}.input_layernorm.weight"] = [16]
    TENSORS[f"model.layers.{_i}.post_attention_layernorm.weight"] = [16]
PARAMS = 100 * 16 + 16 + 2 * (4 * 256 + 3 * 512 + 2 * 16)
CONFIG = {
    "hidden_size": 16,
    "num_hidden_layers": 2,
    "vocab_size": 100,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "intermediate_size": 32,
    "tie_word_embeddings": True,
    "dtype": "bfloat16",
}


def write_safetensors(path: Path, tensors: dict[str, list[int]], dtype: str = "F32", size: int = 4) -> None:
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in tensors.items():
        n = size
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


@pytest.fixture
def model_dir(tmp_path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    write_safetensors(folder / "model.safetensors", TENSORS)
    (folder / "config.json").write_text(json.dumps(CONFIG))
    (folder / "tokenizer.json").write_text("x" * 5000)
    return folder


def fake_usage(free: int, total: int = 100 * MiB, mount: str = "/mnt/small"):
    return lambda path: Usage(path=str(path), mount=mount, total=total, used=total - free, free=free)


def test_the_model_size_comes_from_the_safetensors_headers(model_dir):
    size = model_size(model_dir)
    assert size.source == "safetensors headers" and size.parameters == PARAMS and size.weights_bytes == 4 * PARAMS
    assert size.other_bytes == (model_dir / "config.json").stat().st_size + 5000
    assert model_size("Qwen/Qwen2.5-0.5B-Instruct") is None and model_size(None) is None


def test_sharded_weights_are_read_through_their_index_and_other_copies_ignored(model_dir):
    (model_dir / "model.safetensors").unlink()
    names = sorted(TENSORS)
    halves = {
        "model-00001-of-00002.safetensors": names[: len(names) // 2],
        "model-00002-of-00002.safetensors": names[len(names) // 2 :],
    }
    for shard, tensors in halves.items():
        write_safetensors(model_dir / shard, {n: TENSORS[n] for n in tensors})
    weight_map = {n: shard for shard, tensors in halves.items() for n in tensors}
    (model_dir / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    write_safetensors(model_dir / "consolidated.safetensors", TENSORS)  # a second copy some repositories ship
    size = model_size(model_dir)
    assert size.parameters == PARAMS and size.weights_bytes == 4 * PARAMS


def test_without_weights_files_config_json_gives_the_same_count(model_dir):
    (model_dir / "model.safetensors").unlink()
    size = model_size(model_dir)
    assert size.source == "config.json" and size.parameters == PARAMS and size.weights_bytes == 2 * PARAMS  # bf16


def test_lora_counts_only_the_adapters_of_the_targeted_layers(model_dir):
    size = model_size(model_dir)
    every_linear = 2 * (4 * 8 * (16 + 16) + 3 * 8 * (32 + 16))  # r=8, embeddings and norms excluded
    assert lora_parameters(size, 8, "all-linear") == every_linear
    assert lora_parameters(size, 8, "q_proj,v_proj") == 2 * 2 * 8 * 32


def test_the_estimate_counts_kept_checkpoints_the_final_model_and_logs(model_dir):
    config = RunConfig(model=str(model_dir), max_steps=10, save_steps=3, samples_per_step=0)
    full = estimate(config)
    per = 4 * PARAMS + 8 * PARAMS + model_size(model_dir).other_bytes + disk_estimate.CHECKPOINT_OVERHEAD + 10 * 1024
    assert full.checkpoints == 4 and full.checkpoint_bytes == per and full.trainable == PARAMS  # 3, 6, 9 and 10
    assert full.total == 4 * per + full.final_bytes + 10 * disk_estimate.EVENTS_PER_STEP + disk.RESERVE_BYTES
    config.save_total_limit = 1
    assert estimate(config).checkpoints == 2  # the newest is written before the oldest goes
    config.peft, config.lora_r = True, 8
    lora = estimate(config)
    assert lora.trainable == lora_parameters(model_size(model_dir), 8, "all-linear") and lora.total < full.total
    by_epochs = estimate(RunConfig(model=str(model_dir), max_steps=-1))
    assert by_epochs.lower_bound and "at least" in by_epochs.describe()


def test_preflight_refuses_with_the_numbers_warns_when_tight_and_can_be_overridden(model_dir, monkeypatch):
    config = RunConfig(model=str(model_dir), max_steps=100, save_steps=1)
    need = estimate(config).total
    monkeypatch.setattr(disk_estimate, "usage", fake_usage(need // 2))
    with pytest.raises(ConfigError) as refused:
        require_room(config, "/mnt/small/runs")
    message = str(refused.value)
    assert refused.value.field == "save_total_limit"
    assert disk.human(need) in message and disk.human(need // 2) + " free" in message and "/mnt/small" in message
    assert "--save-total-limit" in message and "--health disk_check=0" in message
    config.health = {"disk_check": 0}
    check = require_room(config, "/mnt/small/runs")
    assert check.verdict == "no_room" and check.severity is Severity.CRITICAL and "starts anyway" in check.message
    assert disk_estimate.preflight_warning(check).rule == "disk_estimate"
    monkeypatch.setattr(disk_estimate, "usage", fake_usage(int(need * 1.1)))
    assert preflight(RunConfig(model=str(model_dir), max_steps=100, save_steps=1), "/x").verdict == "tight"
    monkeypatch.setattr(disk_estimate, "usage", fake_usage(need * 10))
    assert preflight(RunConfig(model=str(model_dir), max_steps=100, save_steps=1), "/x").verdict == "ok"
    hub = preflight(RunConfig(model="org/model", max_steps=100), "/x")
    assert hub.verdict == "unknown" and not hub.refuses and "not a local model folder" in hub.message


def test_create_run_refuses_before_making_a_folder(model_dir, tmp_path, monkeypatch):
    from grpo_tui.services.lifecycle.supervisor import create_run

    monkeypatch.setattr(disk_estimate, "usage", fake_usage(1 * MiB))
    config = RunConfig(model=str(model_dir), rl_env_module="x.py", rl_env_class="X", max_steps=1000, save_steps=1)
    with pytest.raises(ConfigError, match="cannot finish"):
        create_run(config, tmp_path / "runs")
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())


def test_disk_thresholds_are_validated():
    base = dict(model="m", rl_env_module="x.py", rl_env_class="X")
    assert not RunConfig(**base, health={"disk_check": 0, "disk_margin": 1.5}).problems()
    assert "0 (off) or 1 (on)" in str(RunConfig(**base, health={"disk_check": 2}).problems()[0])
    assert "at most 100" in str(RunConfig(**base, health={"disk_warn_percent": 120}).problems()[0])
    assert Thresholds.from_mapping({"disk_check": 0}).disk_check == 0


@pytest.mark.parametrize(
    "number, kind",
    [
        (errno.ENOSPC, "disk_full"),
        (errno.EDQUOT, "quota_exceeded"),
        (errno.EROFS, "read_only_filesystem"),
        (errno.EIO, "io_error"),
    ],
)
def test_a_disk_errno_names_the_fault_even_wrapped(tmp_path, number, kind):
    error = OSError(number, "failed", str(tmp_path / "events.jsonl"))
    fault = disk_fault(error, tmp_path)
    assert fault.kind == kind and fault.errno_name == errno.errorcode[number] and fault.path.endswith("events.jsonl")
    try:
        try:
            raise error
        except OSError as exc:
            raise RuntimeError("saving failed") from exc
    except RuntimeError as wrapped:
        assert disk_fault(wrapped, tmp_path).kind == kind


def test_a_message_or_a_full_filesystem_names_the_fault_when_the_errno_is_gone(tmp_path, monkeypatch):
    text = RuntimeError(
        'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })'
    )
    assert disk_fault(text, tmp_path).kind == "disk_full"
    target = str(tmp_path / "checkpoints" / "checkpoint-5" / "optimizer.pt")

    def torch_save(f):  # torch's error after a short write says nothing of the disk
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 136320 vs 136208")

    try:
        torch_save(target)
    except RuntimeError as exc:
        torch_error = exc
    monkeypatch.setattr(disk, "usage", fake_usage(free=0, total=6 * MiB))
    fault = disk_fault(torch_error, tmp_path)
    assert fault.kind == "disk_full" and fault.inferred and fault.path == target
    line = fault.describe(tmp_path, "checkpoints/checkpoint-4")
    assert line.startswith("disk_full (ENOSPC): no space left on the filesystem /mnt/small")
    assert "writing checkpoints/checkpoint-5/optimizer.pt failed" in line and "0 B free of 6.0 MiB" in line
    assert line.endswith("last complete checkpoint: checkpoints/checkpoint-4")
    assert fault.evidence(tmp_path, None)["path"] == "checkpoints/checkpoint-5/optimizer.pt"
    assert fault_from_log("", tmp_path).kind == "disk_full"
    monkeypatch.setattr(disk, "usage", fake_usage(free=50 * MiB))
    assert disk_fault(torch_error, tmp_path) is None and fault_from_log("Traceback: KeyError", tmp_path) is None
    assert fault_from_log("OSError: [Errno 28] No space left on device", tmp_path).kind == "disk_full"


def test_usage_reads_the_real_filesystem(tmp_path):
    space = disk.usage(tmp_path / "not" / "yet")
    assert space.total > 0 and 0 <= space.percent_used <= 100 and space.path == str(tmp_path)


def test_crash_rules_know_disk_faults():
    full = Error(
        kind="disk_full",
        message="disk_full (ENOSPC): no space left …",
        step=5,
        extra={
            "errno": "ENOSPC",
            "path": "checkpoints/checkpoint-5/optimizer.pt",
            "free_bytes": 0,
            "last_checkpoint": "checkpoints/checkpoint-4",
        },
    )
    crash = classify_crash("", [full], None)
    assert crash.rule == "crash_disk_full" and crash.evidence["last_checkpoint"] == "checkpoints/checkpoint-4"
    assert "Free space" in crash.advice and "--resume" in crash.advice
    assert classify_crash("", [Error(kind="read_only_filesystem", message="ro")], None).rule == "crash_disk_error"
    logged = classify_crash("OSError: [Errno 28] No space left on device: 'state.json'", [], None)
    assert logged.rule == "crash_disk_full"


def test_the_disk_space_rule_warns_at_90_and_is_critical_at_97_percent():
    assert disk_space_warning(Usage("/r", "/m", 100 * MiB, 89 * MiB, 11 * MiB), 3) is None
    warn = disk_space_warning(Usage("/r", "/m", 100 * MiB, 92 * MiB, 8 * MiB), 3, checkpoint_bytes=2 * MiB)
    assert warn.rule == "disk_space" and warn.severity is Severity.WARN and "92 % full" in warn.message
    critical = disk_space_warning(Usage("/r", "/m", 100 * MiB, 98 * MiB, 2 * MiB), 3, checkpoint_bytes=3 * MiB)
    assert critical.severity is Severity.CRITICAL and "does not fit" in critical.message
    assert disk_space_warning(Usage("/r", "/m", 100, 98, 2), 3, Thresholds(disk_warn_percent=99)) is None


class ShortThenFull:
    """A file that takes part of a write, then reports a full disk (what a filling disk does)."""

    def __init__(self, fh, accept: int):
        self.fh, self.accept, self.closed = fh, accept, False

    def write(self, data):
        if self.accept:
            n = self.fh.write(bytes(data[: self.accept]))
            self.accept = 0
            return n
        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self):
        return self.fh.fileno()


def test_a_write_that_fails_part_way_leaves_no_torn_line(tmp_path):
    path = tmp_path / "events.jsonl"
    writer = EventWriter(path)
    writer.emit(RunStarted(run_id="r"))
    real = writer._fh
    writer._fh = ShortThenFull(real, accept=10)
    with pytest.raises(OSError) as failed:
        writer.emit(Metrics(step=1, values={"reward": 0.5}))
    assert failed.value.errno == errno.ENOSPC and failed.value.filename == str(path)
    assert path.read_bytes().endswith(b"\n")
    writer._fh = real  # space again
    writer.emit(Metrics(step=2, values={"reward": 0.7}))
    writer.close()
    tail = EventTail(path)
    assert [e.type for e in tail.poll()] == ["run_started", "metrics"] and tail.bad_lines == 0


def test_a_writer_opening_a_file_left_mid_line_starts_a_new_line(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"type":"run_started","run_id":"r"}\n{"type":"metr')
    with EventWriter(path) as writer:
        writer.emit(Metrics(step=1, values={"reward": 0.5}))
    tail = EventTail(path)
    assert [e.type for e in tail.poll()] == ["run_started", "metrics"] and tail.bad_lines == 1


def test_the_reserve_is_made_and_released(tmp_path):
    assert make_reserve(tmp_path, size=4096) and (tmp_path / ".reserve").stat().st_size == 4096
    assert release_reserve(tmp_path) == 4096 and release_reserve(tmp_path) == 0


def test_a_fault_describes_an_unknown_path_and_no_checkpoint(tmp_path):
    fault = DiskFault("quota_exceeded", "EDQUOT", None, None)
    assert fault.describe(tmp_path, None) == (
        "quota_exceeded (EDQUOT): disk quota exceeded on the filesystem holding "
        "the run folder: writing the run folder failed; no complete checkpoint"
    )
