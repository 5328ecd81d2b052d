"""Graceful stop from outside: SIGTERM/SIGINT or a stop-request file, then a second signal forces.

First request: finish the current step, save a checkpoint, record ``stop_requested`` and end as
``stopped``. Before training has started there is no step to finish, so the run ends at once. A second
signal means "now": the run is recorded as stopped (forced) and the process exits without waiting. A handler
never writes into the middle of a run-folder write it interrupted (``run/signal_safe.py``).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable

import trainer_core.contract.run.slurm_job as slurm_job
from trainer_core.contract.run import signal_safe
from trainer_core.contract.run.state import read_stop_reason


class StopBeforeTraining(Exception):
    """A stop arrived while the model was still loading."""


class StopController:
    def __init__(self, stop_file, on_request: Callable[[str], None], on_force: Callable[[str], None]):
        self.stop_file = stop_file
        self.on_request = on_request
        self.on_force = on_force
        self.reason: str | None = None
        self.save = True  # the stop saves a checkpoint (a remedy's may not: --remedy-keep-bad)
        self.stop_step: int | None = None
        self._signals = 0
        self._training = False
        self._lock = threading.Lock()
        self._dist = None
        self._previous: dict = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._previous[sig] = signal.signal(sig, self._handle)

    def uninstall(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)
            self._previous.clear()

    def _handle(self, signum, frame):
        self._signals += 1
        if self._signals > 2 and signal_safe.overdue():
            os._exit(128 + signum)  # the write the handlers wait for is stuck: the root records the end
        # the run folder may be mid-write under this frame: the handler's own writes wait for it to end
        signal_safe.when_safe(lambda: self._act(signum, self._signals))

    def _act(self, signum: int, count: int) -> None:
        if count > 1:
            self.on_force(f"{signal.Signals(signum).name} received twice: forced exit")
            os._exit(128 + signum)
        self.request(slurm_job.signal_reason(os.path.dirname(self.stop_file), signum))
        if not self._training:
            raise StopBeforeTraining(self.reason)

    def request(self, reason: str, save: bool = True) -> None:
        with self._lock:
            if self.reason is not None:
                return
            self.reason, self.save = reason, save
        self.on_request(reason)

    @property
    def saves(self) -> bool:
        """Whether the stop saves a checkpoint: always with several ranks (the save is collective, and only rank 0
        knows a remedy's wish)."""
        return self.save or self._dist is not None

    def training_started(self, step: int) -> None:
        self._training = True
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
                self._dist = dist
        except ImportError:
            pass

    def _local_stop(self) -> bool:
        if self.reason is None and os.path.exists(self.stop_file):
            reason = read_stop_reason(self.stop_file) or "stop requested"  # any content: run/state.py
            # the scheduler's reasons stand as they are: `stopped (time_limit)`, `stopped (preempted)`
            self.request(reason if reason in (slurm_job.TIME_LIMIT, slurm_job.PREEMPTED) else f"stop file: {reason}")
        return self.reason is not None

    def agreed_stop(self) -> bool:
        """True on every rank as soon as any rank wants to stop (one all-reduce per step)."""
        local = self._local_stop()
        if self._dist is None:
            return local
        import torch

        backend = self._dist.get_backend()
        device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
        flag = torch.tensor([1 if local else 0], device=device)
        self._dist.all_reduce(flag, op=self._dist.ReduceOp.MAX)
        # another rank saw the stop file first: it is there now for this rank too (a shared run folder), and its
        # reason is the run's, rather than "another rank"
        if flag.item() and self.reason is None and not self._local_stop():
            self.reason = "stop requested on another rank"
        return bool(flag.item())

    def stopped_at(self, step: int) -> None:
        if self.stop_step is None:
            self.stop_step = step
