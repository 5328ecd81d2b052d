"""The TrainerCallback that turns a TRL run into the run folder's event stream, and decides stops.

Metrics are copied verbatim from ``on_log`` (the keys TRL logs are the vocabulary every viewer speaks),
with grpo-tui's own statistics of the step's samples beside them under ``samples/``.
A stop — a signal, or the stop-request file — is decided at a step end; with several processes the
decision is all-reduced so every rank leaves the loop in the same step (a rank that kept going would hang
in the next collective), and the Trainer then saves a checkpoint before returning. The last step is always
saved too, so a completed run can be continued to a higher max_steps.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from transformers import TrainerCallback

from trainer_core.contract.health.monitor import HealthMonitor
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import Checkpoint, HealthWarning, Metrics, Summary, format_metrics_line
from trainer_core.training.remedy_trigger import RemedyTrigger
from trainer_core.training.stopping import StopController


class EventStreamCallback(TrainerCallback):
    def __init__(
        self,
        writer: EventWriter | None,
        stopper: StopController,
        echo: bool = False,
        on_step=None,
        monitor: HealthMonitor | None = None,
        stop_on: tuple[str, ...] = (),
        extra_metrics: Callable[[], dict] | None = None,
        remedy: RemedyTrigger | None = None,
    ):
        self.writer = writer
        self.stopper = stopper
        self.echo = echo
        self.on_step = on_step
        self.monitor = monitor
        self.stop_on = stop_on
        self.extra_metrics = extra_metrics  # grpo-tui's own statistics of the step's samples (health/sample_stats.py)
        self.remedy = remedy

    def on_train_begin(self, args, state, control, **kwargs):
        self.stopper.training_started(state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or self.writer is None or not logs:
            return
        if "train_runtime" in logs:
            self.writer.emit(Summary(step=state.global_step, values=dict(logs)))
            return
        values = {**(self.extra_metrics() if self.extra_metrics else {}), **logs}
        self.writer.emit(Metrics(step=state.global_step, values=values))
        if self.echo:
            print(format_metrics_line(state.global_step, state.max_steps, logs), file=sys.stdout, flush=True)
        for warning in self.monitor.feed(state.global_step, values) if self.monitor else []:
            self.writer.emit(warning)
            act_on_warning(warning, self.stopper, self.remedy, self.stop_on)

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero or self.writer is None:
            return
        self.writer.emit(Checkpoint(step=state.global_step, path=f"checkpoints/checkpoint-{state.global_step}"))

    def on_step_end(self, args, state, control, **kwargs):
        if self.on_step is not None:
            self.on_step(state.global_step)
        if state.max_steps and state.global_step >= state.max_steps and args.save_strategy != "no":
            control.should_save = True  # the last step always has a checkpoint: a completed run can be resumed
        if self.stopper.agreed_stop():
            control.should_training_stop = True
            control.should_save = self.stopper.saves
            self.stopper.stopped_at(state.global_step)


def act_on_warning(
    warning: HealthWarning, stopper: StopController, remedy: RemedyTrigger | None, stop_on: tuple[str, ...]
) -> None:
    """A rule's remedy first (``remedy_trigger``), else ``--stop-on``; every rank leaves at the next step end (the
    stop is all-reduced there)."""
    if stopper.reason is not None:
        return
    decision = remedy.decide(warning) if remedy is not None and remedy.armed else None
    if decision is not None:
        stopper.request(decision.reason, save=decision.save)
    elif warning.rule in stop_on and warning.severity.alarming:
        stopper.request(f"auto-stop: {warning.rule} at step {warning.step}")
