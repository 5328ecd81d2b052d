"""An environment whose reward never varies, for checking how "no learning signal" is reported.

Every completion in a GRPO group gets the same reward, so advantages and reward_std are zero and the
policy cannot move. Prompts match ``PatternEnv`` so runs of the two differ only in the reward.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _pattern_env():
    """Load the sibling ``pattern_env.py`` whether this file was imported as a module or by path."""
    name = "grpo_tui_examples_pattern_env"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("pattern_env.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


class ConstantEnv(_pattern_env().PatternEnv):
    """The pattern prompts, with the same reward for every completion."""

    def __init__(self, value: float = 0.5, target: str = "a", num_prompts: int = 64):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"value must be in [0, 1], got {value}")
        super().__init__(target=target, num_prompts=num_prompts)
        self.value = float(value)

    def score_episode(self, model, tokenizer, completion: str, **row) -> float:
        return self.value
