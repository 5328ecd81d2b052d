"""Which configs one reward inspection speaks for: the same model, environment and sampling settings.

Shared by the inspection itself (which records the key) and the app's launch gate (which looks it up). A
dataset run is keyed on its dataset, prompt shaping and reward functions too; those enter the key only when
set, so an environment run keeps the key it always had.
"""

from __future__ import annotations

import hashlib
import json

GATE_FIELDS = (
    "model",
    "rl_env_module",
    "rl_env_class",
    "rl_env_config",
    "rl_num_generations",
    "rl_max_new_tokens",
    "rl_temperature",
    "rl_top_p",
    "rl_top_k",
    "max_prompt_length",
)
DATASET_GATE_FIELDS = ("dataset", "dataset_config", "dataset_split", "prompt_column", "system_prompt", "reward_funcs")


def config_key(config) -> str:
    data = {name: getattr(config, name) for name in GATE_FIELDS}
    if getattr(config, "dataset", None) or getattr(config, "reward_funcs", None):
        data.update({name: getattr(config, name) for name in DATASET_GATE_FIELDS})
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]
