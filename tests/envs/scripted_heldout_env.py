"""The pattern task with a held-out metric that follows a script, eval by eval, across the run's legs.

The training reward is the pattern task's, learned for real; the held-out ``scripted_task`` takes, at the run's
k-th eval, the k-th value of ``script`` (the evals so far are counted in ``count_file``, so a resumed leg goes on
with the script). The default script rises above the base model's value, then falls under it while the reward
rises: the held-out divergence a remedy rolls back for, to the checkpoint best on the held-out metric; then it
stays high.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from datasets import Dataset

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from pattern_env import PatternEnv, pattern_prompts

SCRIPT = (0.2, 0.8, 0.6, 0.1, 0.8, 0.85, 0.9, 0.9, 0.9, 0.9)


class ScriptedHeldOutEnv(PatternEnv):
    def __init__(self, count_file: str, eval_prompts: int = 4, per_eval: int = 8, script: list | None = None):
        super().__init__("a", 32)
        self.count_file, self.eval_prompts, self.per_eval = Path(count_file), eval_prompts, per_eval
        self.script = tuple(script or SCRIPT)
        self.probed = False  # the trainer's first call, on an empty completion, learns the metric's names

    def build_eval_dataset(self, tokenizer=None) -> Dataset:
        prompts = [p.replace(":", " please:") for p in pattern_prompts(self.target, self.eval_prompts)]
        return Dataset.from_dict({"prompt": prompts, "target": [self.target] * len(prompts)})

    def eval_metrics(self, completion: str, target: str | None = None, **row) -> dict:
        if not self.probed and completion == "":
            self.probed = True
            return {"scripted_task": 0.0}
        calls = json.loads(self.count_file.read_text()) if self.count_file.exists() else 0
        self.count_file.write_text(json.dumps(calls + 1))
        which = min(calls // self.per_eval, len(self.script) - 1)
        return {"scripted_task": self.script[which]}
