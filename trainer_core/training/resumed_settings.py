"""A resumed leg's changed settings, applied after the checkpoint's trainer, optimizer and scheduler states load.

transformers' Trainer restores on resume what the checkpoint saved: the scheduler's state, ``base_lrs`` included,
so a learning rate changed for the resume (``--resume RUN --set lr=…``) would be silently ignored
(transformers #9099); and the trainer state's logging, eval and save cadence. ``on_train_begin`` comes after
those loads: this callback rescales each param group's ``lr`` and the scheduler's ``base_lrs`` to the run's
learning rate (the schedule goes on from the checkpoint's step with the new peak, and the ``learning_rate``
TRL logs is the new one), and takes the cadence from the run's arguments again. A first leg already matches.
The other settings a resume may change (KL coefficient, clip ranges, temperature, gradient clipping) are read
by GRPOTrainer from its arguments, which the resumed leg builds from the new config.yaml.
"""

from __future__ import annotations

import math
import sys

from transformers import TrainerCallback


class ResumedSettings(TrainerCallback):
    def __init__(self, learning_rate: float):
        self.learning_rate = learning_rate
        self.applied: list[float] | None = None  # each param group's lr after a change (None: nothing changed)

    def on_train_begin(self, args, state, control, optimizer=None, lr_scheduler=None, **kwargs):
        state.compute_steps(args, state.max_steps)  # a resume restores the checkpoint's cadence; the run's wins
        scheduler = getattr(lr_scheduler, "scheduler", lr_scheduler)  # accelerate wraps it
        base_lrs = getattr(scheduler, "base_lrs", None)
        if optimizer is None or scheduler is None or not base_lrs:
            return
        if all(math.isclose(base, self.learning_rate, rel_tol=1e-9) for base in base_lrs):
            return
        groups = optimizer.param_groups
        for index, group in enumerate(groups):
            base = base_lrs[min(index, len(base_lrs) - 1)]
            group["lr"] = group["lr"] * self.learning_rate / base if base else self.learning_rate
            group["initial_lr"] = self.learning_rate
        scheduler.base_lrs = [self.learning_rate] * len(base_lrs)
        scheduler._last_lr = [group["lr"] for group in groups]  # what the Trainer logs until the next step
        self.applied = [float(group["lr"]) for group in groups]
        if state.is_world_process_zero:
            print(
                f"learning rate: the checkpoint's schedule peaked at {base_lrs[0]:g}; it goes on at "
                f"{self.learning_rate:g} (optimizer lr {self.applied[0]:g} at step {state.global_step})",
                file=sys.stderr,
                flush=True,
            )
