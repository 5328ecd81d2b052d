"""Starting a run from the app: create the run folder, attach the gate's inspection, start the root process.

This is the blocking half of the launch screen's Launch, kept out of the screen so it runs in a worker and
can be called without widgets. It is the same sequence as ``grpo-tui launch`` (``create_run`` validates the
config and the placement, ``start_root`` spawns the detached root), so the app starts exactly what the CLI
would. A root that cannot be started leaves its folder marked failed with the reason, not "starting"
forever. Errors come back as one ``LaunchError`` with a title and a message for the user; the hardware
pre-flight's (``hardware.check``) come all at once, a line each.
"""

from __future__ import annotations

import time
from pathlib import Path

from grpo_tui.services.lifecycle import inspections
from grpo_tui.services.machine import hardware
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

SKIPPED = "skipped"  # config.inspection of a run launched without a reward inspection, confirmed


def gate_inspection(answer: tuple[str, str | None]) -> str | None:
    """What ``config.inspection`` records for the inspection gate's answer: its id, or 'skipped'."""
    kind, inspection_id = answer
    return inspection_id if kind == "launch" else SKIPPED


class LaunchError(Exception):
    """Why a launch failed, for the user: a title, a message, and the config field it concerns (if any)."""

    def __init__(self, title: str, message: str, field: str | None = None):
        super().__init__(f"{title}: {message}")
        self.title, self.message, self.field = title, message, field

    @classmethod
    def from_exception(cls, exc: BaseException, title: str = "launch failed") -> LaunchError:
        if isinstance(exc, LaunchError):
            return exc
        if isinstance(exc, ConfigError):
            return cls(title, str(exc), exc.field)
        return cls(title, getattr(exc, "strerror", None) or str(exc))


def launch_from_app(
    config: RunConfig, runs_dir: str | Path, gpus: list[int] | None = None, num_processes: int | None = None
) -> RunFolder:
    """Create and start the run of ``config`` (its ``inspection`` already set by the gate) on these GPUs.

    Blocks (folder creation, spawning): call it from a worker. Raises ``LaunchError`` for any failure; a
    run folder created before the failure is left marked failed.
    """
    from grpo_tui.services.lifecycle.supervisor import LaunchOptions, create_run, start_root, world_size

    slurm = bool(config.slurm)  # a Slurm job: placed on its node's GPUs, submitted instead of started
    available = list(range(config.slurm.get("gpus_per_node") or 0)) if slurm else None
    try:
        verdict = hardware.check(
            config, gpus=gpus, num_processes=num_processes, available=available, world_size=world_size
        )
        if verdict.problems:  # every one, a line each; the form focuses the first one's field
            first = verdict.problems[0]
            raise LaunchError("cannot launch", "\n".join(str(p) for p in verdict.problems), first.field)
        folder, placement = create_run(
            config,
            runs_dir,
            gpus=gpus,
            num_processes=num_processes,
            available=available,
            status=Status.QUEUED if slurm else Status.STARTING,
        )
        hardware.record(folder, verdict)
    except Exception as exc:
        raise LaunchError.from_exception(exc) from exc
    try:
        if config.inspection and config.inspection != SKIPPED:
            inspections.attach(
                inspections.Inspection(inspections.inspections_dir(runs_dir) / config.inspection), folder
            )
        if slurm:
            from grpo_tui.services.slurm.batch import submit

            submit(folder, config, placement)
        else:
            start_root(folder, placement, LaunchOptions())
    except Exception as exc:
        folder.write_state(
            status=Status.FAILED, exit_reason=f"could not start the run: {exc}", ended=round(time.time(), 3)
        )
        raise LaunchError.from_exception(exc) from exc
    return folder
