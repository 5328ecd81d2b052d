"""The pattern task, with every checkpoint save held open between the weights and the optimizer.

A real save of the tiny model takes milliseconds, too short to kill the trainer inside it on purpose.
Importing this environment (the trainer imports it, in its own process) wraps the Trainer's
``_save_optimizer_and_scheduler`` with a pause, so for ``SAVE_PAUSE_S`` seconds ``checkpoint-N`` holds the
model weights but no optimizer, scheduler or ``trainer_state.json``: exactly what a full disk or a SIGKILL
during a save leaves behind. Test code only: the product has no hook for it.
"""

import sys
import time
from pathlib import Path

from transformers import Trainer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from pattern_env import PatternEnv

SAVE_PAUSE_S = 2.0
_save_optimizer_and_scheduler = Trainer._save_optimizer_and_scheduler


def _paused(self, output_dir):
    time.sleep(SAVE_PAUSE_S)
    return _save_optimizer_and_scheduler(self, output_dir)


Trainer._save_optimizer_and_scheduler = _paused


class SlowSavePattern(PatternEnv):
    pass
