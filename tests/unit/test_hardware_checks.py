"""The hardware pre-flight (docs/hardware.md): each check with its package or device missing and present, the
fallbacks, every problem at once, the machine as the launcher sees it (NVML or the fake GPU hook), and the
trainer's second look at start. Packages that are "present" are fakes written to tmp_path and put on
sys.path (found, never imported); "missing" ones are hidden behind a probe that finds nothing."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from grpo_tui.services.machine import hardware
from trainer_core.contract.config.hardware import (
    STATE_KEY,
    Gpu,
    Machine,
    PreflightError,
    apply_fallbacks,
    fallback_warning,
    installed_version,
    preflight,
    vllm_range,
)
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import HealthWarning
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.rules import HealthRule

from ..helpers import EXAMPLES, cli

BASE = {"model": "m", "rl_env_module": "e.py", "rl_env_class": "E"}
CPU = Machine("this machine (test)")
A100 = Machine("this machine (test)", (Gpu(0, "A100", (8, 0)),))
H100 = Machine("this machine (test)", (Gpu(0, "H100", (9, 0)),))
T4 = Machine("this machine (test)", (Gpu(0, "T4", (7, 5)), Gpu(1, "A100", (8, 0))))
UNKNOWN = Machine("the Slurm job's node", gpus_known=False)


def nothing(module: str, dist: str) -> None:
    """A probe on a machine where no optional package is installed."""
    return None


def config(**fields) -> RunConfig:
    return RunConfig(**{**BASE, **fields})


def init(**kwargs) -> RunConfig:
    return config(grpo_args={"model_init_kwargs": kwargs})


def problems(cfg: RunConfig, machine: Machine, packages=nothing) -> list:
    return preflight(cfg, machine, packages).problems


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """``fake_package(module, dist, version)``: an importable package with its distribution metadata."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(module: str, dist: str, version: str) -> None:
        (tmp_path / module).mkdir()
        (tmp_path / module / "__init__.py").write_text("raise ImportError('a fake: never imported')\n")
        info = tmp_path / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")

    return make


# -- the probe -----------------------------------------------------------------------------------------
def test_a_package_is_found_with_its_version_and_never_imported(fake_package):
    assert installed_version("flash_attn", "flash-attn") is None
    fake_package("flash_attn", "flash-attn", "2.7.4")
    assert installed_version("flash_attn", "flash-attn") == "2.7.4"
    assert "flash_attn" not in sys.modules


def test_the_vllm_range_is_trls_own():
    assert vllm_range() == ("0.22.0", "0.31.0")  # trl 1.16's trl[vllm] requirement


# -- attention -----------------------------------------------------------------------------------------
def test_flash_attention_on_a_cpu_without_flash_attn_is_one_error_naming_both_and_the_fix():
    [problem] = problems(init(attn_implementation="flash_attention_2"), CPU)
    text = str(problem)
    assert problem.field == "grpo_args" and "\n" not in text
    assert text.startswith("attn_implementation: flash_attention_2 ") and "cannot run on this machine (test)" in text
    assert "the flash-attn package is not installed and there is no GPU" in text
    assert "sdpa instead of flash_attention_2" in text and "--on-missing fallback" in text


def test_flash_attention_2_needs_the_package_a_recent_enough_one_and_an_ampere_gpu(fake_package):
    cfg = init(attn_implementation="flash_attention_2")
    [missing] = problems(cfg, A100)
    assert "flash-attn package is not installed" in str(missing) and "pip install flash-attn" in str(missing)
    fake_package("flash_attn", "flash-attn", "2.7.4")
    assert problems(cfg, A100, installed_version) == []
    [old] = problems(cfg, T4, installed_version)
    assert "GPU 0 (T4) has compute capability 7.5; flash_attention_2 needs 8.0 or newer" in str(old)
    assert "package" not in str(old)


def test_an_old_flash_attn_is_named_with_the_version_transformers_needs(fake_package):
    fake_package("flash_attn", "flash-attn", "2.1.0")
    [problem] = problems(init(attn_implementation="flash_attention_2"), A100, installed_version)
    assert "flash-attn is 2.1.0; transformers needs 2.3.3 or newer" in str(problem)


def test_flash_attention_3_needs_flash_attn_interface_and_a_hopper_gpu(fake_package):
    cfg = init(attn_implementation="flash_attention_3")
    assert "the flash-attn-3 package is not installed" in str(problems(cfg, H100)[0])
    fake_package("flash_attn_interface", "flash-attn-3", "3.0.0b1")
    assert problems(cfg, H100, installed_version) == []
    [problem] = problems(cfg, A100, installed_version)
    assert "compute capability 8.0; flash_attention_3 needs 9.0 or newer" in str(problem)


def test_a_hub_kernel_needs_the_kernels_package_and_a_gpu(fake_package):
    cfg = init(attn_implementation="kernels-community/flash-attn2")
    assert "the kernels package is not installed" in str(problems(cfg, A100)[0])
    fake_package("kernels", "kernels", "0.10.0")
    assert problems(cfg, A100, installed_version) == []
    [problem] = problems(cfg, CPU, installed_version)
    assert "there is no GPU" in str(problem) and "sdpa instead of kernels-community/flash-attn2" in str(problem)


@pytest.mark.parametrize("name", ["sdpa", "eager", "flex_attention", None])
def test_pytorchs_own_attention_runs_anywhere(name):
    assert problems(init(attn_implementation=name), CPU) == []


# -- precision and dtype -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "setting,machine,fallback",
    [("bf16", CPU, "no"), ("fp16", CPU, "no"), ("bf16", T4, "fp16")],
)
def test_mixed_precision_the_device_lacks_falls_back(setting, machine, fallback):
    cfg = config(mixed_precision=setting)
    [problem] = problems(cfg, machine)
    assert problem.field == "mixed_precision" and f"mixed_precision: {setting} " in str(problem)
    assert f"or a recipe's {setting}: true" in str(problem)
    apply_fallbacks(cfg, [problem])
    assert cfg.mixed_precision == fallback


@pytest.mark.parametrize("setting,machine", [("bf16", A100), ("fp16", T4), ("auto", CPU), ("no", CPU)])
def test_mixed_precision_the_device_has_passes(setting, machine):
    assert problems(config(mixed_precision=setting), machine) == []


def test_bf16_in_grpo_args_on_an_old_gpu_becomes_fp16():
    cfg = config(grpo_args={"bf16": True, "max_grad_norm": 0.5})
    [problem] = problems(cfg, T4)
    apply_fallbacks(cfg, [problem])
    assert cfg.grpo_args == {"bf16": False, "fp16": True, "max_grad_norm": 0.5}


@pytest.mark.parametrize(
    "key,value,machine,fallback",
    [
        ("dtype", "bfloat16", CPU, "float32"),
        ("torch_dtype", "float16", CPU, "float32"),
        ("dtype", "bfloat16", T4, "float16"),
    ],
)
def test_a_half_precision_dtype_the_device_lacks_falls_back(key, value, machine, fallback):
    cfg = init(**{key: value, "revision": "main"})
    [problem] = problems(cfg, machine)
    assert str(problem).startswith(f"{key}: {value} ")
    apply_fallbacks(cfg, [problem])
    assert cfg.grpo_args["model_init_kwargs"] == {key: fallback, "revision": "main"}


def test_a_dtype_the_device_has_passes():
    assert problems(init(dtype="bfloat16"), A100) == problems(init(dtype="float16"), T4) == []
    assert problems(init(dtype="float32"), CPU) == problems(init(dtype="auto"), CPU) == []


# -- vLLM ----------------------------------------------------------------------------------------------
def test_use_vllm_without_vllm_falls_back_to_transformers_generation():
    cfg = config(use_vllm=True)
    [problem] = problems(cfg, A100)
    assert problem.field == "use_vllm" and "vLLM is not installed" in str(problem)
    assert "0.22.0 to 0.31.0" in str(problem) and "generated with transformers" in str(problem)
    apply_fallbacks(cfg, [problem])
    assert cfg.use_vllm is False


def test_vllm_in_range_on_a_gpu_passes_and_out_of_range_or_on_a_cpu_does_not(fake_package):
    fake_package("vllm", "vllm", "0.30.0")
    assert problems(config(use_vllm=True), A100, installed_version) == []
    [cpu] = problems(config(use_vllm=True), CPU, installed_version)
    assert "there is no GPU to generate on" in str(cpu) and "not installed" not in str(cpu)
    remote = config(use_vllm=True, vllm_mode="server", vllm_server_url="http://10.0.0.2:8000")
    assert problems(remote, A100, installed_version) == []
    # the server may have a GPU, but the trainer's side of TRL's NCCL weight sync is here, on a CPU
    [elsewhere] = problems(remote, CPU, installed_version)
    assert "over NCCL, which needs CUDA (a server elsewhere too" in str(elsewhere)


def test_a_vllm_trl_does_not_support_is_named_with_the_range(fake_package):
    fake_package("vllm", "vllm", "0.40.1+cu129")
    [problem] = problems(config(use_vllm=True), A100, installed_version)
    assert "vLLM 0.40.1+cu129 is installed, and TRL supports 0.22.0 to 0.31.0" in str(problem)


# -- quantisation --------------------------------------------------------------------------------------
def test_4bit_loading_needs_bitsandbytes_and_a_gpu(fake_package):
    cfg = init(load_in_4bit=True, dtype="float32")
    [problem] = problems(cfg, A100)
    assert "bitsandbytes package is not installed" in str(problem) and str(problem).startswith("load_in_4bit: true")
    fake_package("bitsandbytes", "bitsandbytes", "0.45.0")
    assert problems(cfg, A100, installed_version) == []
    [cpu] = problems(cfg, CPU, installed_version)
    assert "there is no GPU" in str(cpu)
    apply_fallbacks(cfg, [cpu])
    assert cfg.grpo_args["model_init_kwargs"] == {"dtype": "float32"}  # loaded unquantised


def test_a_bitsandbytes_quantization_config_is_checked_too():
    cfg = init(quantization_config={"load_in_8bit": True})
    [problem] = problems(cfg, CPU)
    apply_fallbacks(cfg, [problem])
    assert cfg.grpo_args["model_init_kwargs"] == {}


# -- trackers ------------------------------------------------------------------------------------------
def test_a_tracker_that_is_not_installed_is_dropped_and_the_others_kept():
    cfg = config(report_to="wandb,tensorboard")
    found = preflight(cfg, CPU, lambda module, dist: "2.0" if module == "tensorboard" else None).problems
    [problem] = found
    assert problem.field == "report_to" and "wandb is not installed" in str(problem)
    apply_fallbacks(cfg, found)
    assert cfg.report_to == "tensorboard"


# -- all at once, fallbacks and their record -----------------------------------------------------------
def early_recipe() -> RunConfig:
    import argparse

    from grpo_tui.config_flags import add_run_config_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_run_config_arguments(parser)
    args = parser.parse_args(["--config", str(EXAMPLES / "recipes" / "open_r1_early_2025.yaml")])
    return config_from_args(args, notes=[])


def test_the_early_open_r1_recipe_on_a_cpu_earns_one_error_per_hardware_setting():
    cfg = early_recipe()
    found = problems(cfg, CPU)
    assert [p.setting for p in found] == ["attn_implementation", "mixed_precision", "dtype", "use_vllm", "report_to"]
    error = PreflightError(list(found))
    assert error.field == "grpo_args" and str(error).splitlines() == [str(p) for p in found]
    records = apply_fallbacks(cfg, found)
    assert cfg.grpo_args["model_init_kwargs"] == {"dtype": "float32", "attn_implementation": "sdpa"}
    assert (cfg.mixed_precision, cfg.use_vllm, cfg.report_to) == ("no", False, "none")
    assert cfg.problems(world_size=7) == [] and problems(cfg, CPU) == []
    event = fallback_warning(records)
    assert isinstance(event, HealthWarning) and event.rule is HealthRule.HARDWARE_FALLBACK and event.step == 0
    assert event.advice == HealthRule.HARDWARE_FALLBACK.advice
    originals = {r["setting"]: r["original"] for r in event.evidence["fallbacks"]}
    assert originals == {
        "attn_implementation": "flash_attention_2",
        "mixed_precision": "bf16",
        "dtype": "bfloat16",
        "use_vllm": True,
        "report_to": "wandb",
    }
    assert "flash_attention_2' -> attn_implementation: sdpa" in event.message
    json.dumps(event.to_record())  # plain JSON on disk


def test_where_the_gpus_are_not_known_only_the_packages_are_judged_and_the_rest_is_left_to_the_trainer():
    found = preflight(early_recipe(), UNKNOWN, nothing)
    assert [p.setting for p in found.problems] == ["attn_implementation", "use_vllm", "report_to"]
    assert "there is no GPU" not in " ".join(map(str, found.problems))
    assert found.deferred == ["attn_implementation", "mixed precision", "dtype", "use_vllm"]
    capability_unknown = Machine("here", (Gpu(0),))
    assert preflight(config(mixed_precision="bf16"), capability_unknown, nothing).deferred == ["mixed precision"]


# -- the launcher's view of the machine ----------------------------------------------------------------
def test_the_fake_gpu_hook_carries_compute_capabilities(monkeypatch):
    from trainer_core.contract.config.placement import Placement

    gpus = [{"index": 0, "name": "T4", "compute_capability": "7.5"}, {"index": 1, "compute_capability": [9, 0]}]
    monkeypatch.setenv("GRPO_TUI_FAKE_GPUS", json.dumps(gpus))
    assert hardware.capabilities() == {0: (7, 5), 1: (9, 0)}
    machine = hardware.machine_for(config(), Placement(train_gpus=[1]))
    assert machine.gpus == (Gpu(1, "Fake GPU", (9, 0)),) and machine.where.startswith("this machine (")
    monkeypatch.setenv("GRPO_TUI_FAKE_GPUS", "2")
    assert hardware.machine_for(config(), Placement(train_gpus=[0, 1])).oldest() is None  # capability unknown
    assert hardware.machine_for(config(), Placement()).cpu


def test_a_slurm_node_is_known_by_its_gpu_count_only():
    node = hardware.machine_for(config(slurm={"gpus_per_node": 2}), None, slurm=True)
    assert node.gpus == (Gpu(0), Gpu(1)) and node.oldest() is None and node.where == "the Slurm job's node"
    assert not hardware.machine_for(config(slurm={"nodes": 1}), None, slurm=True).gpus_known


def test_check_reports_a_missing_gpu_with_the_hardware_problems_at_once(monkeypatch):
    monkeypatch.setenv("GRPO_TUI_FAKE_GPUS", json.dumps([{"index": 0, "name": "T4", "compute_capability": "7.5"}]))
    verdict = hardware.check(config(mixed_precision="bf16"), gpus=[0])
    [problem] = verdict.problems
    assert "GPU 0 (T4) has compute capability 7.5; bf16 needs 8.0 or newer" in str(problem)
    verdict = hardware.check(config(use_vllm=True, report_to="wandb"), gpus=[3])
    assert [p.field for p in verdict.problems][:1] == ["gpus"] and len(verdict.problems) >= 2
    fallback = config(mixed_precision="bf16", on_missing="fallback")
    verdict = hardware.check(fallback, gpus=[0])
    assert verdict.problems == [] and fallback.mixed_precision == "fp16"
    assert verdict.notes()[0].startswith("fallback: mixed_precision: bf16 (or a recipe's bf16: true) cannot run")


# -- the trainer's look at start -----------------------------------------------------------------------
def test_the_trainer_refuses_or_falls_back_with_its_own_view_and_writes_one_warning(tmp_path):
    from trainer_core.training.run_context import RunContext
    from trainer_core.training.trl_setup import hardware_at_start

    folder = RunFolder.create(tmp_path)
    with pytest.raises(PreflightError, match="mixed_precision: bf16"):
        hardware_at_start(config(mixed_precision="bf16"), None, machine=CPU)
    launched = {"setting": "use_vllm", "original": True, "applied": {"use_vllm": False}, "missing": "no vLLM"}
    folder.write_state(**{STATE_KEY: [launched]})
    cfg = config(mixed_precision="bf16", on_missing="fallback")
    folder.save_config(cfg)
    run = RunContext(cfg, folder, echo=False)
    try:
        hardware_at_start(cfg, run, machine=CPU)
    finally:
        run.close()
    assert yaml.safe_load(folder.config_file.read_text())["mixed_precision"] == "no"  # what runs
    lines = [json.loads(line) for line in folder.events_file.read_text().splitlines()]
    [event] = [e for e in lines if e.get("rule") == "hardware_fallback"]
    assert [r["setting"] for r in event["evidence"]["fallbacks"]] == ["use_vllm", "mixed_precision"]
    assert [r["setting"] for r in folder.read_state()[STATE_KEY]] == ["use_vllm", "mixed_precision"]


# -- the command line ----------------------------------------------------------------------------------
def test_launch_dry_run_names_every_problem_and_with_fallback_says_what_it_would_run(tmp_path):
    env = {"GRPO_TUI_FAKE_GPUS": json.dumps([{"index": 0, "name": "T4", "compute_capability": "7.5"}])}
    args = ("launch", "--dry-run", "--model", "m", "--rl-env-module", "m.env", "--rl-env-class", "E", "--json")
    attention = 'model_init_kwargs={"attn_implementation": "flash_attention_2"}'
    flags = ("--mixed-precision", "bf16", "--grpo-arg", attention)
    refused = cli(*args, *flags, env=env)
    reply = json.loads(refused.stdout)
    assert refused.returncode == 2 and not reply["ok"]
    assert [p["field"] for p in reply["problems"]] == ["grpo_args", "mixed_precision"]
    assert "compute capability 7.5" in reply["problems"][1]["message"]
    allowed = cli(*args, *flags, "--on-missing", "fallback", env=env)
    reply = json.loads(allowed.stdout)
    assert allowed.returncode == 0 and reply["ok"]
    assert [n.split(":")[2].strip() for n in reply["notes"]] == ["attn_implementation", "mixed_precision"]


def test_train_refuses_before_anything_is_created_with_one_error_line_each(tmp_path):
    runs = tmp_path / "runs"
    result = cli(
        *("train", "--model", "m", "--rl-env-module", "m.env", "--rl-env-class", "E", "--runs-dir", str(runs)),
        *("--mixed-precision", "fp16", "--use-vllm"),
        env={"GRPO_TUI_FAKE_GPUS": "0"},  # a machine without GPUs
    )
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == 2 and len(errors) == 2, result.stderr
    assert errors[0].startswith("error: mixed_precision: fp16 ") and errors[1].startswith("error: use_vllm: true ")
    assert not runs.exists()
