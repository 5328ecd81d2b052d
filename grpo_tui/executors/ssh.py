"""A remote host, driven through its own ``grpo-tui`` over one SSH connection.

Nothing of a run is re-implemented here: listing is the host's ``runs --json``, stopping its ``stop --json``,
launching its ``launch --json`` (the config travels on stdin, so a path in it is a path there), and
watching a local copy of the run folder fed by its ``events --mirror`` (``mirror.py``).

What the host prints is parsed by ``trainer_core.contract.remote_wire`` before anything here uses it: a
reply that breaks the format is one ``HostError`` naming the host, and a ``runs --json`` row that does is
dropped with one such line (``HostRuns.error``) while the host's other rows are listed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orjson import loads

from trainer_core.contract.remote_wire import (
    LaunchCheck,
    RunRow,
    WireError,
    parse_info,
    parse_launch_check,
    parse_launch_reply,
    parse_run_rows,
    parse_stop_reply,
)
from trainer_core.contract.run_folder import FORMAT_VERSION

from ..services.catalog import RunInfo
from .hosts import Host, HostError
from .mirror import Mirror
from .ssh_connection import Connection

_connections: dict[Host, Connection] = {}
_lock = threading.Lock()


def connection(host: Host, interactive: bool = False) -> Connection:
    """The one connection to ``host`` in this process."""
    with _lock:
        conn = _connections.get(host)
        if conn is None:
            conn = _connections[host] = Connection(host, interactive)
        return conn


def close_all() -> None:
    """Stop every master this process started (a test, or the app on exit, when asked)."""
    with _lock:
        conns = list(_connections.values())
        _connections.clear()
    for conn in conns:
        try:
            conn.close()
        except Exception:  # a master already gone
            pass


class RemoteError(HostError):
    """A grpo-tui command on the host refused or failed: its own error line, prefixed with the host."""


@dataclass(frozen=True)
class HostRuns:
    """A host's ``runs --json``: the valid rows, and one line naming the host for the rows that were dropped."""

    runs: list[RunInfo]
    error: str | None = None


def run_info(row: RunRow, host: str) -> RunInfo:
    return RunInfo(
        run_id=row.run_id, path=Path(row.path), project=row.project, model=row.model, status=row.status,
        step=row.step, total=row.total, last_reward=row.last_reward, started=row.started, ended=row.ended,
        duration=row.duration, warnings=row.warnings, last_warning=row.last_warning, exit_reason=row.exit_reason,
        alerts=list(row.alerts), host=host, queue_reason=row.queue_reason)


class SshExecutor:
    """Runs on ``host``. ``runs_dir``: the runs folder there (default: the host's setting, else its default).
    ``on_problem``: told the line for rows ``list_runs`` dropped (the CLI prints it; the app uses ``read_runs``)."""

    kind = "ssh"

    def __init__(self, host: Host, runs_dir: str | None = None, interactive: bool = False,
                 on_problem: Callable[[str], None] | None = None):
        self.host = host
        self.name = host.name
        self.runs_dir = runs_dir or host.runs_dir
        self.conn = connection(host, interactive)
        self.on_problem = on_problem
        self._info: dict | None = None

    def runs_args(self) -> list[str]:
        return ["--runs-dir", self.runs_dir] if self.runs_dir else []

    def call(self, args: list[str], input: bytes | None = None, timeout: float = 120) -> bytes:
        """``grpo-tui ARGS`` there; its stdout, or RemoteError with its error line."""
        done = self.conn.run(args, input=input, timeout=timeout)
        if done.returncode != 0:
            said = [line for line in done.stderr.decode(errors="replace").splitlines() if line.strip()]
            raise RemoteError(f"host {self.name}: {said[-1] if said else f'grpo-tui {args[0]} exited with {done.returncode}'}")
        return done.stdout

    def _reply(self, what: str, out: bytes, parse: Callable[[Any], Any]) -> Any:
        """``out`` (what ``grpo-tui WHAT`` printed) parsed; RemoteError naming the host when it breaks the format."""
        try:
            data = loads(out)
        except ValueError:
            raise RemoteError(f"host {self.name}: `grpo-tui {what}` did not print JSON: {out[:60]!r}") from None
        return self._parsed(what, data, parse)

    def _parsed(self, what: str, data: Any, parse: Callable[[Any], Any]) -> Any:
        try:
            return parse(data)
        except WireError as exc:
            raise RemoteError(f"host {self.name}: `grpo-tui {what}` sent a bad reply: {exc}") from None

    def info(self) -> dict:
        """The host's version, run format, runs folder and GPUs; checks that both sides speak one run format."""
        if self._info is None:
            try:
                out = self.call(["info", "--json", *self.runs_args()], timeout=60)
            except RemoteError as exc:
                raise HostError(f"host {self.name}: its grpo-tui does not answer `info --json` ({exc}); install the same "
                                "grpo-tui version there as here") from None
            try:
                data = loads(out)
            except ValueError:
                raise HostError(f"host {self.name}: `grpo-tui info --json` did not print JSON there; is `command:` "
                                "in the hosts file grpo-tui?") from None
            if isinstance(data, dict) and data.get("run_format") != FORMAT_VERSION:
                raise HostError(f"host {self.name}: its grpo-tui {str(data.get('version'))[:40]} writes run format "
                                f"{str(data.get('run_format'))[:40]}, this one reads {FORMAT_VERSION}; install the same "
                                "grpo-tui version on both machines")
            self._info = self._reply("info --json", out, parse_info).to_dict()
        return self._info

    def read_runs(self, refs: list[str] | None = None) -> HostRuns:
        """The host's runs (``refs``: only these); a row that breaks the format is left out and named in ``error``."""
        self.info()
        out = self.call(["runs", "--json", *self.runs_args(), *(refs or [])], timeout=120)
        rows, problems = self._reply("runs --json", out, parse_run_rows)
        error = None
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            error = (f"host {self.name}: left out {len(problems)} of the {len(rows) + len(problems)} runs it listed, "
                     f"their rows are not valid: {problems[0]}{more}")
        return HostRuns([run_info(row, self.name) for row in rows], error)

    def list_runs(self, refs: list[str] | None = None) -> list[RunInfo]:
        """The host's valid runs; the line for rows left out goes to ``on_problem``."""
        found = self.read_runs(refs)
        if found.error and self.on_problem is not None:
            self.on_problem(found.error)
        return found.runs

    def find(self, ref: str) -> RunInfo:
        """The run ``ref`` (id, prefix, ``latest``) names on the host."""
        found = self.read_runs([ref])
        if len(found.runs) != 1:
            raise RemoteError(found.error if found.error and not found.runs else
                              f"host {self.name}: {ref!r} names {len(found.runs)} runs")
        if found.error and self.on_problem is not None:
            self.on_problem(found.error)
        return found.runs[0]

    def mirror(self, run: RunInfo) -> Mirror:
        return Mirror(self.conn, run.run_id, str(run.path))

    def stop(self, run: RunInfo, force: bool = False, timeout: float = 300) -> dict:
        args = ["stop", str(run.path), "--json", "--timeout", str(timeout), *(["--force"] if force else [])]
        return self._reply("stop --json", self.call(args, timeout=timeout + 120), parse_stop_reply).to_dict()

    def resume(self, run: RunInfo) -> dict:
        out = self.call(["launch", "--resume", str(run.path), "--json", *self.runs_args()], timeout=300)
        return self._launched(out)

    def launch(self, argv: list[str], config_text: bytes | None = None) -> dict:
        """``launch ARGV --json`` there; ``config_text``: a config file's bytes, read there as ``--config -``."""
        self.info()
        return self._launched(self.call(self._launch_args(argv, config_text), input=config_text, timeout=300))

    def _launched(self, out: bytes) -> dict:
        reply = self._reply("launch --json", out, parse_launch_reply)
        return {"run_id": reply.run_id, "path": reply.path, "pid": reply.pid, "slurm_job_id": reply.slurm_job_id}

    def check_launch(self, argv: list[str], config_text: bytes | None = None) -> LaunchCheck:
        """``launch ARGV --dry-run --json`` there: can the run start, and if not, each problem with its field."""
        self.info()
        done = self.conn.run([*self._launch_args(argv, config_text), "--dry-run"], input=config_text, timeout=300)
        try:
            data = loads(done.stdout)
        except ValueError:
            said = [line for line in done.stderr.decode(errors="replace").splitlines() if line.strip()]
            raise RemoteError(f"host {self.name}: {said[-1] if said else 'launch --dry-run printed no verdict'}") from None
        return self._parsed("launch --dry-run --json", data, parse_launch_check)

    def _launch_args(self, argv: list[str], config_text: bytes | None) -> list[str]:
        return ["launch", *argv, *(["--config", "-"] if config_text is not None else []), *self.runs_args(), "--json"]
