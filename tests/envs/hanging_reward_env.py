"""The pattern task whose reward function hangs for good after ``hang_after`` scores, as one waiting on a
dead service does: the trainer stays alive and writes nothing more."""

import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from pattern_env import PatternEnv


class HangingReward(PatternEnv):
    def __init__(self, hang_after: int = 24, **kwargs):
        super().__init__(**kwargs)
        self.hang_after, self.scored = hang_after, 0

    def score_episode(self, model, tokenizer, completion, **row):
        self.scored += 1
        if self.scored > self.hang_after:
            threading.Event().wait()
        return super().score_episode(model, tokenizer, completion, **row)
