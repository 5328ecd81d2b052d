"""The executor interface: where a run lives and how to reach it, one protocol for every place.

The screens and the CLI never ask where a run physically is: they take the executor of its host from the
registry (``registry.py``, ``get(run.host)``) and call it. ``LocalExecutor`` (``local.py``) is this machine:
run folders read in place, processes started and stopped here. ``SshExecutor`` (``ssh.py``) is a host driven
through its own ``grpo-tui … --json`` over SSH. Slurm is not a place but a way of starting a run in one
(``slurm.py``, a config's ``slurm:`` section, on this machine or a login node reached over SSH): its runs are
listed, watched and stopped through the executor of the machine that submitted them, whose stop asks the
queue (``services/lifecycle/slurm_stop.py``) and reports like any other.

An executor owns a run's lifecycle for every caller (find it by a reference, how it stands, launch, stop,
resume or extend it, its log) and returns data: ``RunInfo`` rows (``services/records/run_row.py``), ``Launched`` for
a launch or a resume, ``StopOutcome`` for a stop (``services/records/stop_outcome.py``), the log as text chunks. What
a host sends back is parsed into the same types (``grpo_tui.services.records.wire``), so a result from here and one
from a host are one type, and ``judge_stop`` tells the user the same of either. Printing and command lines
are the caller's: ``grpo-tui logs`` prints the chunks, ``place_args`` gives the words that name a place on a
command line. A failure is an ``ExecutorError`` (``HostError`` for a host), one line for the user; a launch
raises ``LaunchError`` (``services/lifecycle/launching.py``), which also names the config field it concerns.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from grpo_tui.services.records.host_info import HostInfo
from grpo_tui.services.records.stop_outcome import StopOutcome
from grpo_tui.services.records.wire import LaunchReply

if TYPE_CHECKING:
    from grpo_tui.services.machine.gpus import GPU
    from grpo_tui.services.records.run_row import RunInfo
    from trainer_core.contract.config.resume_plan import ResumePlan
    from trainer_core.contract.config.run_config import RunConfig
    from trainer_core.contract.run.folder import RunFolder
    from trainer_core.contract.run.status import Status

Launched = LaunchReply  # a run started (or resumed): its id, its folder's path where it runs, its pid or Slurm job
OnPlan = Callable[["ResumePlan"], None]  # told what a resume will do, before it starts


class ExecutorError(Exception):
    """An executor could not do what was asked: one line for the user (a host's names the host and the fix)."""


class RunRef(Protocol):
    """What names a run to its executor: its id and its folder's path there (a ``RunInfo``, a ``Launched``)."""

    @property
    def run_id(self) -> str: ...

    @property
    def path(self) -> str | os.PathLike[str]: ...


@dataclass(frozen=True)
class RunAt:
    """A run known by its folder only (``grpo-tui watch PATH``, a monitor opened on a path)."""

    run_id: str
    path: Path


@dataclass(frozen=True)
class RunListing:
    """The runs a place lists, and one line naming it for rows it sent that were left out (invalid)."""

    runs: list[RunInfo]
    error: str | None = None


class RunCopy(Protocol):
    """A run folder on this machine that shows a run wherever it runs: a local run's own folder, a remote run's
    mirror (``mirror.py``). ``start`` keeps it current in the background until ``stop``; ``sync`` copies once;
    ``ready`` is set once its config and state are there."""

    ready: threading.Event

    @property
    def folder(self) -> RunFolder: ...

    def start(self) -> RunCopy: ...

    def stop(self) -> None: ...

    def sync(self) -> None: ...

    def wait_ready(self, timeout: float) -> bool: ...

    def gpus(self) -> list[GPU]:
        """The GPUs of the machine the run is on, as last known."""
        ...


class Executor(Protocol):
    """A place where runs live. See the module docstring; docs/architecture.md ("Executors") shows how to add one."""

    @property
    def name(self) -> str:
        """``local`` (``hosts.LOCAL``) for this machine, else the host's name."""
        ...

    @property
    def host_name(self) -> str | None:
        """The host's name, None for this machine: what ``RunInfo.host`` says of its runs."""
        ...

    @property
    def where(self) -> str:
        """The place in words, for panels and messages: ``this machine``, ``host gpubox``."""
        ...

    @property
    def runs_dir(self) -> str | os.PathLike[str] | None:
        """Its runs folder (a path there); None: that place's default."""
        ...

    @property
    def folders_here(self) -> bool:
        """Its runs' folders are on this machine: they are compared in place, and a launch passes the
        reward-inspection gate run here (a remote config names the host's files)."""
        ...

    def info(self) -> HostInfo:
        """Its grpo-tui version, the run format it writes, its runs folder and GPUs (``grpo-tui info --json``)."""
        ...

    def list_runs(self, refs: list[str] | None = None) -> RunListing:
        """Its runs, newest first (``refs``: only those, each an id, a prefix or ``latest``)."""
        ...

    def find(self, ref: str) -> RunInfo:
        """The one run ``ref`` names; ExecutorError when it names none or several."""
        ...

    def mirror(self, run: RunRef) -> RunCopy:
        """A folder here that shows ``run`` (the monitor, ``watch``); started by the caller."""
        ...

    def launch(self, config: RunConfig, gpus: list[int] | None = None, num_processes: int | None = None) -> Launched:
        """Check and start a run of ``config`` (detached; a Slurm job when it has a ``slurm:`` section).
        Raises LaunchError. Blocks: call it from a worker."""
        ...

    def status(self, run: RunRef) -> Status:
        """How ``run`` stands now: a live status only while its processes are the run's (``lost`` otherwise)."""
        ...

    def stop(self, run: RunRef, force: bool = False, timeout: float = ..., by: str | None = None) -> StopOutcome:
        """Stop ``run``: graceful with a checkpoint (unless ``force``) for up to ``timeout`` s, then TERM/KILL;
        ``by`` says who asked ("CLI", "the app"), recorded in the run's stop request and its exit reason."""
        ...

    def resume(self, run: RunRef, max_steps: int | None = None, on_plan: OnPlan | None = None) -> Launched:
        """Continue an ended (or lost) run from its newest complete checkpoint, in its own folder; ``max_steps``
        extends it to a new total (a completed run continues only to a higher one). ``on_plan`` hears the plan
        (which checkpoint, to which step, what was passed over) before the run starts, where it is made here."""
        ...

    def logs(self, run: RunRef, follow: bool = False) -> Iterator[str]:
        """``run``'s trainer.log as text as written (escape sequences included; showing it safely is the
        caller's), in chunks; with ``follow`` until the run is no longer live."""
        ...

    def gpus(self) -> list[GPU]:
        """The GPUs a new run there can be placed on."""
        ...


@dataclass(frozen=True)
class StopVerdict:
    """What the user is told of a stop: the message, and whether it is an error."""

    message: str
    failed: bool

    @property
    def severity(self) -> Literal["error", "information"]:
        """The notification's severity (Textual's names)."""
        return "error" if self.failed else "information"


def judge_stop(outcome: StopOutcome) -> StopVerdict:
    """The one judgement of a stop, whatever executor made it: an error when a process is left after KILL or
    something on record was refused (the run may still be running, and the user should look); the message
    says which. ``grpo-tui stop`` exits with 1 on the same condition."""
    return StopVerdict(outcome.message, outcome.failed)


def place_args(executor: Executor) -> list[str]:
    """The words that make a ``grpo-tui`` command act where ``executor`` is: ``--runs-dir DIR``, ``--host NAME``."""
    runs_dir, host = executor.runs_dir, executor.host_name
    here = ["--runs-dir", str(runs_dir)] if runs_dir is not None and str(runs_dir) else []
    return [*here, *(["--host", host] if host else [])]
