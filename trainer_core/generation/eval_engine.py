"""One vLLM engine for ``grpo-tui eval --engine vllm``: started once, each chosen model's weights loaded into it.

Starting an engine is most of the cost of a vLLM eval (tens of seconds on a CPU, compiling kernels), so the
command starts one, in this process as a colocated run's is, on the run's base model, and scores the models in
turn by loading their weights into it: a full checkpoint's own weights, a LoRA checkpoint's base + adapter
merged in memory (never written to disk). Merged weights work on every vLLM build, CPU included, where an
adapter request needs ``enable_lora`` and kernels vLLM's CPU build may lack, so that is what is used, and said.
On vLLM's CPU build the weights go in through the model runner's ``reload_weights``, as the colocate sync does
(vllm_cpu_sync.py); elsewhere through the model's ``load_weights``, as TRL's sync does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from trainer_core.contract.config.run_config import RunConfig
from trainer_core.generation import vllm_cpu_sync

MERGED = "merged weights"
FULL = "full weights"


def stored_dtype(model: str) -> str:
    """The dtype the model's weights are stored in (its config's), which transformers loads them in: vLLM's own
    choice differs on a CPU, where it runs a float32 model in bfloat16 and greedy answers part at near-ties
    (measured on the tiny model: the same completion for 27 of 40 prompts in bfloat16, 40 of 40 in float32)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model)
    dtype = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    return str(dtype).removeprefix("torch.") if dtype else "auto"


def start(config: RunConfig, base: str, run_folder: Path, seed: int):
    """An engine on ``base`` in this process (one rank, as TRL's colocate engine is), in the dtype the model is
    stored in."""
    from trl.trainer.utils import ensure_master_addr_port
    from vllm import LLM  # pyright: ignore[reportMissingImports]  # the vllm extra

    vllm_cpu_sync.prepare_engine_env(run_folder)
    for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1")):
        os.environ.setdefault(key, value)
    ensure_master_addr_port()
    return LLM(
        model=base,
        dtype=stored_dtype(base),
        gpu_memory_utilization=config.vllm_gpu_memory_utilization,
        distributed_executor_backend="external_launcher",
        seed=seed,
        max_num_batched_tokens=4096,
    )


def dtype_of(llm) -> str:
    return str(llm.llm_engine.model_config.dtype).removeprefix("torch.")


def _weights(model) -> Iterator[tuple[str, object]]:
    for name, param in model.named_parameters():
        yield name, param.data


def load(llm, model) -> str:
    """Put ``model``'s weights into the engine (a PEFT model merged first); which way it went (``MERGED``/``FULL``)."""
    how = FULL
    if hasattr(model, "merge_and_unload"):
        model, how = model.merge_and_unload(), MERGED
    runner = llm.llm_engine.model_executor.driver_worker.model_runner
    if vllm_cpu_sync.is_cpu_build(vllm_cpu_sync.vllm_version()):
        vllm_cpu_sync.reload_into(runner, _weights(model))
    else:
        runner.model.load_weights(_weights(model))
    llm.reset_prefix_cache()
    return how
