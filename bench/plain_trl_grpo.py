"""The baseline for bench.train_vs_trl: the same GRPO training written as a plain TRL script.

It trains examples/pattern_env.py's PatternEnv with exactly the GRPOConfig values that ``grpo-tui train``
maps the bench's flags to, and appends one ``{"step", "time", "length"}`` line per logged step to TIMES_FILE,
taken in ``on_log`` just as grpo-tui's events are, so both sides' steps per second are measured the same way
(``length``: the step's mean completion length, which says whether both sides did the same work).

    python -m bench.plain_trl_grpo MODEL_DIR STEPS TIMES_FILE [--output-dir DIR] [--burn-ms MS]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import time
from pathlib import Path

from transformers import AutoTokenizer, TrainerCallback
from trl import GRPOConfig, GRPOTrainer

PATTERN_ENV = Path(__file__).resolve().parents[1] / "examples" / "pattern_env.py"


def load_pattern_env():
    spec = importlib.util.spec_from_file_location("pattern_env", PATTERN_ENV)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PatternEnv()


class StepTimes(TrainerCallback):
    def __init__(self, path: Path, burn_ms: float = 0.0):
        self.file = open(path, "a", encoding="utf-8")
        self.burn_s = burn_ms / 1000

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "train_runtime" not in logs:
            burn(self.burn_s)
            length = logs.get("completions/mean_length")
            self.file.write(json.dumps({"step": state.global_step, "time": time.time(), "length": length}) + "\n")
            self.file.flush()


def burn(seconds: float) -> None:
    """Spin for ``seconds`` of this thread's CPU time: work planted to check that the bench sees it."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.plain_trl_grpo", description=__doc__.splitlines()[0])
    parser.add_argument("model_dir")
    parser.add_argument("steps", type=int)
    parser.add_argument("times_file", type=Path)
    parser.add_argument(
        "--output-dir", type=Path, default=None, help="trainer output_dir (default: next to TIMES_FILE)"
    )
    parser.add_argument(
        "--burn-ms",
        type=float,
        default=0.0,
        help="spin this many ms of CPU per logged step (work planted to check that the bench sees it; default 0)",
    )
    args = parser.parse_args()

    env = load_pattern_env()

    def reward(prompts, completions, target, **kw):
        return [env.score_episode(None, None, c, target=t) for c, t in zip(completions, target)]

    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    tokenizer.padding_side = "left"
    settings = dict(
        output_dir=str(args.output_dir or args.times_file.parent / "trl-output"),
        num_generations=4,
        per_device_train_batch_size=8,
        max_completion_length=16,
        learning_rate=0.002,
        beta=0.1,
        epsilon=0.2,
        loss_type="grpo",
        mask_truncated_completions=False,
        top_k=50,
        top_p=1.0,
        temperature=1.0,
        num_train_epochs=1,
        max_steps=args.steps,
        warmup_steps=0.0,
        lr_scheduler_type="linear",
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=42,
        disable_tqdm=True,
        gradient_checkpointing=False,
        activation_checkpointing=False,
        bf16=False,
        fp16=False,
    )
    if "activation_checkpointing" not in {f.name for f in dataclasses.fields(GRPOConfig)}:
        settings.pop("activation_checkpointing")  # transformers before the rename
    config = GRPOConfig(**settings)
    trainer = GRPOTrainer(
        model=args.model_dir,
        reward_funcs=[reward],
        args=config,
        train_dataset=env.build_dataset(tokenizer),
        processing_class=tokenizer,
        callbacks=[StepTimes(args.times_file, args.burn_ms)],
    )
    trainer.train()


if __name__ == "__main__":
    main()
