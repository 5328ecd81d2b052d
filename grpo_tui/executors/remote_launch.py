"""Starting a run of the launch form on another host: the host checks the config, then starts it.

The form validates values here; what only the host can judge (the files a config names, its GPUs, its
disk) is checked by its own ``launch --dry-run`` before anything starts, and its problems come back with
the config field they concern, so the form can point at it.
"""

from __future__ import annotations

from trainer_core.contract.cli_args import config_to_argv
from trainer_core.contract.config import RunConfig

from ..services.catalog import RunInfo
from ..services.launching import LaunchError
from .hosts import HostError
from .ssh import RemoteError, SshExecutor


def launch_words(config: RunConfig, gpus: list[int] | None, num_processes: int | None) -> list[str]:
    words = config_to_argv(config)
    if gpus is not None:
        words += ["--gpus", ",".join(map(str, gpus))]
    if num_processes is not None:
        words += ["--num-processes", str(num_processes)]
    return words


def launch_remote(ex: SshExecutor, config: RunConfig, gpus: list[int] | None = None,
                  num_processes: int | None = None) -> RunInfo:
    """Check on the host, start there, and return the new run's row. Raises LaunchError. Blocks: a worker's."""
    words = launch_words(config, gpus, num_processes)
    try:
        verdict = ex.check_launch(words)
    except RemoteError as exc:
        raise LaunchError(f"cannot launch on {ex.name}", str(exc)) from None
    except HostError as exc:
        raise LaunchError(f"cannot reach {ex.name}", str(exc)) from None
    if not verdict.ok:  # the reply is checked: a refusal names at least one problem
        first = verdict.problems[0]
        raise LaunchError(f"cannot launch on {ex.name}", first.message, first.field)
    try:
        return ex.find(ex.launch(words)["run_id"])
    except HostError as exc:
        raise LaunchError(f"launch on {ex.name} failed", str(exc)) from None
