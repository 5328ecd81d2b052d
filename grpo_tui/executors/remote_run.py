"""A run on another host as the app holds it: its row, the executor that reaches it, its mirrored folder."""

from __future__ import annotations

from dataclasses import dataclass

from ..services.catalog import RunInfo
from ..services.gpus import GPU
from ..services.run_status import remote_view
from .hosts import HostError
from .mirror import Mirror
from .ssh import SshExecutor


@dataclass
class RemoteRun:
    executor: SshExecutor
    run: RunInfo
    mirror: Mirror

    @classmethod
    def open(cls, executor: SshExecutor, run: RunInfo) -> RemoteRun:
        """Start the mirror (blocking until config and state are here: call it from a worker)."""
        mirror = executor.mirror(run).start()
        try:
            if not mirror.wait_ready(120):
                raise HostError(f"host {executor.name}: run {run.run_id} sent nothing within 120s")
        except HostError:
            mirror.stop()
            raise
        return cls(executor, run, mirror)

    @property
    def host(self) -> str:
        return self.executor.name

    def gpus(self) -> list[GPU]:
        view = remote_view(self.mirror.folder) or {}
        return [GPU.from_dict(g) for g in view.get("gpus") or [] if isinstance(g, dict)]

    def stop(self, force: bool = False) -> dict:
        return self.executor.stop(self.run, force=force)
