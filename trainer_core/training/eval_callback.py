"""When the held-out evaluation runs, and what follows from it: the TrainerCallback of a run with a held-out set.

It evaluates the base model before the first step (unless the run resumes with evals on record), every
``eval_steps`` steps, at every checkpoint (so each checkpoint records the metrics of its own step, which the
ledger and ``--keep-best`` read), and at the last step. Each eval is one ``eval`` event; the health monitor
judges it (the reward and the task parting ways), which may stop the run as any ``--stop-on`` rule does.
With ``--keep-best`` this callback, not the Trainer, rotates the checkpoints: the newest
``save_total_limit`` and the best K by the held-out metric stay.

Only rank 0 evaluates; the other ranks wait for it in their next collective.
"""

from __future__ import annotations

import shutil
from collections import deque
from pathlib import Path
from statistics import fmean
from typing import Any

from transformers import TrainerCallback

from trainer_core.contract.config.eval_settings import parse_keep_best
from trainer_core.contract.health.monitor import HealthMonitor
from trainer_core.contract.run.checkpoints import checkpoint_step
from trainer_core.contract.run.event_log import scan_events
from trainer_core.contract.run.events import Eval, EventType
from trainer_core.contract.run.ledger import kept, read_ledger, write_checkpoint_eval
from trainer_core.evaluation.evaluator import Evaluator
from trainer_core.training.callbacks import act_on_warning
from trainer_core.training.remedy_trigger import RemedyTrigger
from trainer_core.training.run_context import RunContext

REWARD_WINDOW = 5  # logged steps whose mean reward is the training reward an eval is read against


class EvalCallback(TrainerCallback):
    def __init__(
        self,
        evaluator: Evaluator,
        run: RunContext,
        monitor: HealthMonitor | None = None,
        stop_on: tuple[str, ...] = (),
        save_total_limit: int | None = None,
        remedy: RemedyTrigger | None = None,
    ):
        self.evaluator = evaluator
        self.remedy = remedy
        self.run = run
        self.monitor = monitor
        self.stop_on = stop_on
        self.keep = parse_keep_best(run.config.keep_best)
        self.save_total_limit = save_total_limit
        self.every = run.config.eval_steps or run.config.save_steps
        self.rewards: deque[float] = deque(maxlen=REWARD_WINDOW)
        self.trainer: Any = None  # set once the trainer exists: its unwrapped model is what is evaluated
        self.last: Eval | None = None
        self.done_steps = self._recorded_steps()

    def _recorded_steps(self) -> set[int]:
        """Steps already evaluated in this run up to the checkpoint it resumes from (a resumed leg goes on from
        them; a later step it trains again is evaluated again)."""
        events = self.run.folder.events_file
        resumed = self.run.resumed_from
        upto = (checkpoint_step(Path(resumed)) or 0) if resumed else 0 if self.run.from_base else -1
        found, _ = scan_events(events, (EventType.EVAL,)) if upto >= 0 else ([], 0)  # a long run: eval lines only
        evals = [e for e in found if isinstance(e, Eval) and e.step <= upto]
        for event in evals:
            if self.monitor is not None:
                self.monitor.feed_eval(event)  # the divergence rule sees the run's whole eval history
            self.last = event
        return {e.step for e in evals}

    def _model(self):
        trainer = self.trainer
        assert trainer is not None  # bound right after GRPOTrainer is built
        return trainer.accelerator.unwrap_model(trainer.model)

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero or not self.run.config.eval_on_start:
            return
        if self.done_steps:  # a resumed run: its baseline is on record
            return
        self._evaluate(state.global_step, base=state.global_step == 0)

    def on_log(self, args, state, control, logs=None, **kwargs):
        reward = (logs or {}).get("reward")
        if isinstance(reward, (int, float)) and not isinstance(reward, bool) and reward == reward:
            self.rewards.append(float(reward))

    def on_step_end(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        step = state.global_step
        due = step % self.every == 0 or control.should_save or control.should_training_stop
        if due or (state.max_steps and step >= state.max_steps):
            self._evaluate(step)

    def _evaluate(self, step: int, base: bool = False) -> None:
        if step in self.done_steps:
            return
        train_reward = fmean(self.rewards) if self.rewards else None
        event = self.evaluator.evaluate(self._model(), step, base=base, train_reward=train_reward)
        self.done_steps.add(step)
        self.last = event
        self.run.emit(event)
        for warning in self.monitor.feed_eval(event) if self.monitor else []:
            self.run.emit(warning)
            act_on_warning(warning, self.run.stopper, self.remedy, self.stop_on)

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        folder = self.run.folder.checkpoints_dir / f"checkpoint-{state.global_step}"
        if self.last is not None and self.last.step == state.global_step and folder.is_dir():
            write_checkpoint_eval(folder, self.last)
        if self.keep is not None:
            self._rotate()

    def _rotate(self) -> None:
        """Keep the newest ``save_total_limit`` checkpoints and the best by the --keep-best metric."""
        entries = [e for e in read_ledger(self.run.folder.path, self.keep.metric if self.keep else None)]
        keep = kept(entries, self.save_total_limit, self.keep)
        for entry in entries:
            if entry.name.startswith("checkpoint-") and entry.name not in keep and "torn" not in entry.marks:
                shutil.rmtree(entry.path, ignore_errors=True)
