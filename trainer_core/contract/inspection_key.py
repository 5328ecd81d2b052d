"""Which configs one reward inspection speaks for: the same model, environment and sampling settings.

Shared by the inspection itself (which records the key) and the app's launch gate (which looks it up).
"""

from __future__ import annotations

import hashlib
import json

GATE_FIELDS = ("model", "rl_env_module", "rl_env_class", "rl_env_config", "rl_num_generations", "rl_max_new_tokens",
               "rl_temperature", "rl_top_p", "rl_top_k", "max_prompt_length")


def config_key(config) -> str:
    data = {name: getattr(config, name) for name in GATE_FIELDS}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]
