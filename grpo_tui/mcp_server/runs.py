"""Which run a tool call means, found by the executors the app and the CLI use, and the errors a caller can fix.

A tool names a run by its id (a unique prefix works too) or ``latest``, on this machine or on a host of
``hosts.yaml`` (``host``). A remote run is read from the local copy its executor keeps (``executors/mirror.py``),
synced before each read, so every reader below sees a run folder wherever the run is. The folded event stream of
each run is kept between calls and polled from its byte offset, so a second question about a long run costs only
what was appended since.
"""

from __future__ import annotations

import threading
from pathlib import Path

from grpo_tui.services.catalog.folders import UnknownRunError, resolve_run
from grpo_tui.services.records.run_row import RunInfo
from grpo_tui.services.stream.folded import RunStream
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

from ..executors.base import Executor, ExecutorError, RunCopy
from ..executors.hosts import LOCAL, HostError
from ..executors.registry import ExecutorRegistry
from ..safe_text import clean_line

LATEST = "latest"


class AnswerError(Exception):
    """A call the server cannot answer as asked: one line naming the problem and the fix (a tool error)."""


class FoundRun:
    """A run, its executor and a folder here that shows it (its own, or a remote run's copy). ``info``, its row,
    is read when first asked for: a question about one series of a long run does not pay for the whole row."""

    def __init__(self, executor: Executor, folder: RunFolder, info: RunInfo | None = None):
        self.executor, self.folder, self._info = executor, folder, info

    @property
    def run_id(self) -> str:
        return self._info.run_id if self._info is not None else self.folder.run_id

    @property
    def info(self) -> RunInfo:
        if self._info is None:
            self._info = self.executor.find(str(self.folder.path))
        return self._info

    @property
    def path(self) -> str:
        """The run folder's path where the run is (on its host for a remote run)."""
        return str(self._info.path if self._info is not None else self.folder.path)

    @property
    def host(self) -> str | None:
        return None if self.executor.host_name is None else self.executor.name

    def status(self) -> Status:
        """How the run stands now (a live status only while its process is the run's)."""
        return self._info.status if self._info is not None else self.executor.status(self)


class Runs:
    """The runs of this machine (``runs_dir``) and of the hosts, as the tools see them."""

    def __init__(self, runs_dir: str | None = None, registry: ExecutorRegistry | None = None):
        self.registry = registry or ExecutorRegistry(runs_dir, host_runs_dir=None, on_problem=_say)
        self._copies: dict[tuple[str, str], RunCopy] = {}
        self._streams: dict[Path, RunStream] = {}
        self._lock = threading.Lock()

    def executor(self, host: str | None) -> Executor:
        try:
            return self.registry.get(host or LOCAL)
        except HostError as exc:
            raise AnswerError(f"host {host!r}: {exc}; list_runs names the hosts that answer") from None

    def find(self, run: str, host: str | None = None, spelled_out: bool = False) -> FoundRun:
        """The run ``run`` names; ``spelled_out``: a destructive call, which takes a run id, never ``latest``."""
        ref = (run or "").strip()
        if not ref:
            raise AnswerError("run is empty: give a run id (list_runs shows them) or 'latest'")
        ex = self.executor(host)
        if spelled_out and ref == LATEST:
            raise AnswerError(
                "run 'latest' is refused for an action: spell out the run's id (list_runs shows it), "
                "so that the run acted on is the one meant"
            )
        try:
            if ex.folders_here and ex.host_name is None:  # a run here: its folder, found as the catalog finds it
                found = FoundRun(ex, resolve_run(ex.runs_dir, ref))
            else:
                info = ex.find(ref)
                found = FoundRun(ex, self._copy(ex, info), info)
        except (ExecutorError, UnknownRunError) as exc:
            raise AnswerError(f"{clean_line(exc)} (list_runs shows the runs{_on(host)})") from None
        if spelled_out and found.run_id != ref:
            raise AnswerError(f"run {ref!r} is a prefix of {found.run_id!r}: spell out the whole id for an action")
        return found

    def _copy(self, ex: Executor, info: RunInfo) -> RunFolder:
        """A remote run's local copy, synced now."""
        key = (ex.name, info.run_id)
        try:
            with self._lock:
                copy = self._copies.get(key)
                if copy is None:
                    copy = self._copies[key] = ex.mirror(info)
            copy.sync()
        except ExecutorError as exc:
            raise AnswerError(f"host {ex.name}: {clean_line(exc)}; check the host with `grpo-tui hosts`") from None
        return copy.folder

    def stream(self, folder: RunFolder) -> RunStream:
        """The run's folded events, read on from where the last call stopped."""
        with self._lock:
            stream = self._streams.get(folder.path)
            if stream is None or stream.tail.offset > _size(folder):  # a new file under the same name
                stream = self._streams[folder.path] = RunStream(folder)
            stream.poll()
            return stream


def _size(folder: RunFolder) -> int:
    try:
        return folder.events_file.stat().st_size
    except OSError:
        return 0


def _on(host: str | None) -> str:
    return f" of host {host}" if host and host != LOCAL else ""


def _say(line: str) -> None:
    import sys

    print(f"grpo-tui mcp: {clean_line(line)}", file=sys.stderr, flush=True)
