"""The vLLM part of the hardware pre-flight on a machine without a GPU (docs/vllm-cpu.md): colocate runs on vLLM's
CPU build (a version with "+cpu") with a model whose heads are 32 or wider; what is missing is named; server-mode
training is refused in one line, because TRL's weight sync to a server needs CUDA. Packages are probes, as in
test_hardware_checks.py (found, never imported)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer_core.contract.config.hardware import CPU_HEAD_DIM, Gpu, Machine, model_head_dim, preflight
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.generation.vllm_cpu_sync import engine_env, is_cpu_build, supported

from ..helpers import cli

CPU = Machine("this machine (test)")
A100 = Machine("this machine (test)", (Gpu(0, "A100", (8, 0)),))


def probe(version: str | None):
    return lambda module, dist: version if module == "vllm" else None


def model_dir(tmp_path, hidden: int, heads: int, **extra) -> str:
    path = tmp_path / f"model-{hidden}-{heads}"
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"hidden_size": hidden, "num_attention_heads": heads, **extra}))
    return str(path)


def vllm_problems(model: str, machine: Machine, version: str | None, **fields) -> list[str]:
    config = RunConfig(model=model, rl_env_module="e.py", rl_env_class="E", use_vllm=True, **fields)
    return [str(p) for p in preflight(config, machine, probe(version)).problems]


def test_colocate_on_the_cpu_build_with_wide_heads_passes(tmp_path):
    assert vllm_problems(model_dir(tmp_path, 128, 4), CPU, "0.31.0+cpu", vllm_mode="colocate") == []


def test_colocate_on_a_cpu_names_each_thing_missing(tmp_path):
    narrow = model_dir(tmp_path, 64, 4)
    [missing] = vllm_problems(narrow, CPU, None, vllm_mode="colocate")
    assert "vLLM is not installed" in missing and "head_dim is 16" in missing and "--for-vllm" in missing
    [cuda_build] = vllm_problems(model_dir(tmp_path, 128, 4), CPU, "0.31.0", vllm_mode="colocate")
    assert "there is no GPU to generate on" in cuda_build and "not the CPU build" in cuda_build
    assert "./dev vllm-env" in cuda_build
    [old] = vllm_problems(model_dir(tmp_path, 256, 8), CPU, "0.40.0+cpu", vllm_mode="colocate")
    assert "vLLM 0.40.0+cpu is installed, and TRL supports" in old
    [heads] = vllm_problems(narrow, CPU, "0.31.0+cpu", vllm_mode="colocate")
    assert f"vLLM's CPU attention needs {CPU_HEAD_DIM} or more" in heads and "not installed" not in heads


def test_head_dim_is_read_from_config_json_and_only_judged_on_a_cpu(tmp_path):
    assert model_head_dim(model_dir(tmp_path, 96, 2, head_dim=16)) == 16
    assert model_head_dim(str(tmp_path / "absent")) is None and model_head_dim("org/hub-model") is None
    assert vllm_problems(model_dir(tmp_path, 64, 4), A100, "0.31.0", vllm_mode="colocate") == []
    assert vllm_problems("org/hub-model", CPU, "0.31.0+cpu", vllm_mode="colocate") == []  # unknown: not judged


def test_server_mode_training_on_a_cpu_is_refused_in_one_line(tmp_path):
    [problem] = vllm_problems(model_dir(tmp_path, 128, 4), CPU, "0.31.0+cpu", vllm_mode="server")
    assert "\n" not in problem and "NCCL, which needs CUDA" in problem and "vllm_mode: colocate" in problem


@pytest.mark.parametrize(
    ("version", "cpu", "ok"),
    [("0.31.0+cpu", True, True), ("0.31.2+cpu", True, True), ("0.30.0+cpu", True, False), ("0.31.0", False, False)],
)
def test_the_cpu_sync_is_installed_only_on_the_versions_it_was_checked_on(version, cpu, ok):
    assert is_cpu_build(version) is cpu and supported(version) is ok


def test_a_cpu_engine_compiles_into_the_users_cache_and_keeps_its_sockets_in_a_short_private_folder(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("VLLM_CACHE_ROOT", raising=False)
    short = engine_env(tmp_path / "r")
    assert short["VLLM_CACHE_ROOT"] == str(tmp_path / "home" / ".cache" / "grpo-tui" / "vllm")  # not ~/.cache/vllm
    assert short["VLLM_CPU_KVCACHE_SPACE"] and engine_env(Path("/r"))["TMPDIR"] == "/r/vllm/tmp"
    deep = tmp_path / ("d" * 80) / "20261203-040951-255-8d6fb8"
    env = engine_env(deep)
    assert len(env["TMPDIR"]) < 60 and env["TMPDIR"].endswith("040951-255-8d6fb8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert engine_env(deep)["VLLM_CACHE_ROOT"] == str(tmp_path / "xdg" / "grpo-tui" / "vllm")
    monkeypatch.setenv("VLLM_CACHE_ROOT", str(tmp_path / "mine"))
    assert engine_env(deep)["VLLM_CACHE_ROOT"] == str(tmp_path / "mine")


def test_the_cli_refuses_server_mode_training_on_this_cpu_and_starts_nothing(tmp_path):
    runs = tmp_path / "runs"
    result = cli(
        "train",
        "--model",
        model_dir(tmp_path, 128, 4),
        "--rl-env-module",
        "e.py",
        "--rl-env-class",
        "E",
        "--use-vllm",
        "--vllm-mode",
        "server",
        "--runs-dir",
        str(runs),
        env={"GRPO_TUI_FAKE_GPUS": ""},
    )
    # the launcher's placement refuses first (no GPU for a server); the trainer's own pre-flight, where a placement
    # passed (a node whose GPUs the launcher could not see), gives the NCCL line above
    assert result.returncode == 2, result.stderr
    assert "server mode needs 1 GPU(s) for the server" in result.stderr and not runs.exists()


def test_tiny_model_for_vllm_has_heads_vllm_can_serve_on_a_cpu(tmp_path):
    out = tmp_path / "tiny-vllm"
    result = cli("tiny-model", str(out), "--random", "--for-vllm")
    assert result.returncode == 0, result.stderr
    assert model_head_dim(str(out)) == CPU_HEAD_DIM
    assert json.loads((out / ".grpo-tui-tiny-model").read_text())["for_vllm"] is True
    assert vllm_problems(str(out), CPU, "0.31.0+cpu", vllm_mode="colocate") == []


def test_the_cli_refuses_training_on_this_cpu_against_a_server_elsewhere(tmp_path):
    """A server of its own elsewhere has its GPU, but the trainer's side of the weight sync is here: refused before
    a run folder exists, not after TRL's 240 s wait for the server and a failed NCCL start."""
    runs = tmp_path / "runs"
    result = cli(
        "train", "--model", model_dir(tmp_path, 128, 4), "--rl-env-module", "e.py", "--rl-env-class", "E",
        "--use-vllm", "--vllm-mode", "server", "--vllm-server-url", "http://127.0.0.1:9", "--runs-dir", str(runs),
        env={"GRPO_TUI_FAKE_GPUS": ""},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "which needs CUDA (a server elsewhere too" in result.stderr and not runs.exists(), result.stderr
    assert "Traceback" not in result.stderr
