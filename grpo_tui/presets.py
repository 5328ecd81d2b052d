"""Named starting points for a run's settings, offered by the launch screen.

A preset is a partial RunConfig: it changes only the fields it names and leaves every other field
(the model, usually the environment) as it was. The CPU demo preset is the demo config file shipped as
package data (with its environment pointing at the installed ``pattern_env.py``, as ``grpo-tui demo``
does), so the file, the demo and the launch screen cannot drift apart. It names its model too, the demo's tiny
model in the user's cache: a newcomer's first run needs no model of their own. That model may not be built yet,
so the preset says so (``tiny_model``) and the launch screen builds it in a child process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainer_core.contract.config.run_config import ConfigError, RunConfig, load_file

from .resources import demo_config_file, demo_env_file
from .services.lifecycle.tiny_model import tiny_model_dir


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    fixed: dict[str, Any] = field(default_factory=dict)
    read: Callable[[], dict[str, Any]] | None = None
    """Reads a file-backed preset's fields each time it is applied, so edits to the file show."""
    tiny_model: bool = False
    """Its ``model`` is the demo's tiny model (``tiny_model_dir()``), which is built on first use."""

    def values(self) -> dict[str, Any]:
        """The fields this preset sets."""
        return {**self.fixed, **(self.read() if self.read is not None else {})}


def cpu_demo_values() -> dict[str, Any]:
    """The demo config file's fields, its environment module replaced by the installed file's path, and the demo's
    tiny model (built or not) as its model."""
    return {**load_file(demo_config_file()), "rl_env_module": str(demo_env_file()), "model": str(tiny_model_dir())}


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "RLVR reference",
            "Verifiable-reward reference setup: 8 completions per prompt, lr 5e-7, KL 0.01, colocated vLLM.",
            {"rl_num_generations": 8, "lr": 5e-7, "rl_kl_coef": 0.01, "use_vllm": True, "vllm_mode": "colocate"},
        ),
        Preset(
            "small GPU (memory saving)",
            "LoRA r=16, gradient checkpointing, small batches and short completions, vLLM capped at 20% memory.",
            {
                "peft": True,
                "lora_r": 16,
                "gradient_checkpointing": True,
                "batch_size": 4,
                "rl_num_generations": 4,
                "vllm_gpu_memory_utilization": 0.2,
                "rl_max_new_tokens": 256,
            },
        ),
        Preset(
            "large GPU",
            "Groups of 16, batch 16 with 2 accumulation steps, 1024-token completions through vLLM.",
            {
                "rl_num_generations": 16,
                "batch_size": 16,
                "use_vllm": True,
                "rl_max_new_tokens": 1024,
                "gradient_accumulation": 2,
            },
        ),
        Preset(
            "CPU demo",
            "What grpo-tui demo runs: the tiny offline model learns to write the letter 'a' on a CPU.",
            read=cpu_demo_values,
            tiny_model=True,
        ),
    )
}


def preset_values(name: str) -> dict[str, Any]:
    """The fields preset ``name`` sets; ConfigError (field 'preset') for an unknown name."""
    preset = PRESETS.get(name)
    if preset is None:
        raise ConfigError("preset", f"unknown preset {name!r}; presets: {', '.join(PRESETS)}.")
    return preset.values()


def apply_preset(config: RunConfig, name: str) -> RunConfig:
    """A copy of ``config`` with preset ``name``'s fields set; ``config`` itself is not changed."""
    values = preset_values(name)
    return RunConfig.from_dict({**config.to_dict(), **values}, source=f"preset {name!r}")
