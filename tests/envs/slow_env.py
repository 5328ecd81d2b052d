"""The pattern task, slowed down so a test can stop a run at a chosen step."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from pattern_env import PatternEnv


class SlowPattern(PatternEnv):
    def score_episode(self, model, tokenizer, completion, **row):
        time.sleep(0.15)
        return super().score_episode(model, tokenizer, completion, **row)
