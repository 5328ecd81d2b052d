"""A remote host, driven through its own ``grpo-tui`` over one SSH connection.

Nothing of a run is re-implemented here: listing is the host's ``runs --json``, stopping its ``stop --json``,
launching its ``launch --dry-run --json`` then ``launch --json`` (the config as flags, or a file on stdin: a
path in it is a path there), and watching a local copy of the run folder fed by its ``events --mirror`` (``mirror.py``).
It is an ``Executor`` (``base.py``): what it returns is what ``LocalExecutor`` returns for a run here.

What the host prints is parsed by ``grpo_tui.services.records.wire`` before anything here uses it: a
reply that breaks the format is one ``HostError`` naming the host, and a ``runs --json`` row that does is
dropped with one such line (``RunListing.error``) while the host's other rows are listed.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import os
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

from orjson import loads

from grpo_tui.config_flags import config_to_argv
from grpo_tui.services.lifecycle.launching import LaunchError
from grpo_tui.services.machine.gpus import GPU
from grpo_tui.services.records.host_info import HostInfo
from grpo_tui.services.records.run_row import RunInfo
from grpo_tui.services.records.stop_outcome import StopOutcome
from grpo_tui.services.records.wire import (
    LaunchCheck,
    WireError,
    parse_launch_check,
    parse_launch_reply,
    parse_run_rows,
)
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.folder import FORMAT_VERSION
from trainer_core.contract.run.status import Status

from .base import Launched, OnPlan, RunListing, RunRef
from .hosts import Host, HostError
from .mirror import Mirror
from .ssh_connection import Connection, check_remote

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


def launch_words(config: RunConfig, gpus: list[int] | None, num_processes: int | None) -> list[str]:
    """``launch``'s words for a run of ``config`` on these GPUs (None: the host's default)."""
    words = config_to_argv(config)
    if gpus is not None:
        words += ["--gpus", ",".join(map(str, gpus))]
    if num_processes is not None:
        words += ["--num-processes", str(num_processes)]
    return words


class SshExecutor:
    """Runs on ``host``. ``runs_dir``: the runs folder there (default: the host's setting, else its default).
    ``on_problem``: told the line for rows ``find`` dropped (the CLI prints it)."""

    kind = "ssh"
    folders_here = False

    def __init__(
        self,
        host: Host,
        runs_dir: str | None = None,
        interactive: bool = False,
        on_problem: Callable[[str], None] | None = None,
    ):
        self.host = host
        self.name = host.name
        self.runs_dir = runs_dir or host.runs_dir
        self.conn = connection(host, interactive)
        self.on_problem = on_problem
        self._info: HostInfo | None = None

    @property
    def host_name(self) -> str:
        return self.name

    @property
    def where(self) -> str:
        return f"host {self.name}"

    def runs_args(self) -> list[str]:
        """``--runs-dir`` for a command run there (it is the host's own command: no ``--host``)."""
        return ["--runs-dir", self.runs_dir] if self.runs_dir else []

    def call(self, args: list[str], input: bytes | None = None, timeout: float = 120) -> bytes:
        """``grpo-tui ARGS`` there; its stdout, or RemoteError with its error line."""
        done = self.conn.run(args, input=input, timeout=timeout)
        if done.returncode != 0:
            said = [line for line in done.stderr.decode(errors="replace").splitlines() if line.strip()]
            raise RemoteError(
                f"host {self.name}: {said[-1] if said else f'grpo-tui {args[0]} exited with {done.returncode}'}"
            )
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

    def info(self) -> HostInfo:
        """The host's version, run format, runs folder and GPUs; checks that both sides speak one run format."""
        info = self._info
        if info is None:
            try:
                out = self.call(["info", "--json", *self.runs_args()], timeout=60)
            except RemoteError as exc:
                raise HostError(
                    f"host {self.name}: its grpo-tui does not answer `info --json` ({exc}); install the same "
                    "grpo-tui version there as here"
                ) from None
            try:
                data = loads(out)
            except ValueError:
                raise HostError(
                    f"host {self.name}: `grpo-tui info --json` did not print JSON there; is `command:` "
                    "in the hosts file grpo-tui?"
                ) from None
            if isinstance(data, dict) and data.get("run_format") != FORMAT_VERSION:
                raise HostError(
                    f"host {self.name}: its grpo-tui {str(data.get('version'))[:40]} writes run format "
                    f"{str(data.get('run_format'))[:40]}, this one reads {FORMAT_VERSION}; install the same "
                    "grpo-tui version on both machines"
                )
            info = self._info = self._parsed("info --json", data, HostInfo.from_wire)
        return info

    def gpus(self) -> list[GPU]:
        return list(self.info().gpus)

    def list_runs(self, refs: list[str] | None = None) -> RunListing:
        """The host's runs (``refs``: only these); a row that breaks the format is left out and named in ``error``."""
        self.info()
        out = self.call(["runs", "--json", *self.runs_args(), *(refs or [])], timeout=120)
        rows, problems = self._reply("runs --json", out, parse_run_rows)
        error = None
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            error = (
                f"host {self.name}: left out {len(problems)} of the {len(rows) + len(problems)} runs it listed, "
                f"their rows are not valid: {problems[0]}{more}"
            )
        return RunListing([dataclasses.replace(row, host=self.name) for row in rows], error)

    def find(self, ref: str) -> RunInfo:
        """The run ``ref`` (id, prefix, ``latest``) names on the host."""
        found = self.list_runs([ref])
        if len(found.runs) != 1:
            raise RemoteError(
                found.error
                if found.error and not found.runs
                else f"host {self.name}: {ref!r} names {len(found.runs)} runs"
            )
        if found.error and self.on_problem is not None:
            self.on_problem(found.error)
        return found.runs[0]

    def mirror(self, run: RunRef) -> Mirror:
        return Mirror(self.conn, run.run_id, str(run.path))

    def status(self, run: RunRef) -> Status:
        """The host's verdict (its ``runs --json`` row of the run's folder there)."""
        return self.find(str(run.path)).status

    def stop(self, run: RunRef, force: bool = False, timeout: float = 300, by: str | None = None) -> StopOutcome:
        """The host's ``stop --json``; ``by`` goes as ``--by=BY on THIS-MACHINE`` (one word, quoted by ``call``, and
        joined to its option so a value that starts with a dash is not read as one)."""
        args = ["stop", str(run.path), "--json", "--timeout", str(timeout), *(["--force"] if force else [])]
        if by:
            args.append(f"--by={by} on {socket.gethostname()}")
        return self._reply("stop --json", self.call(args, timeout=timeout + 120), StopOutcome.from_wire)

    def resume(self, run: RunRef, max_steps: int | None = None, on_plan: OnPlan | None = None) -> Launched:
        """The host's ``launch --resume --json``; the plan is made there (``on_plan`` is not told it)."""
        extend = [] if max_steps is None else ["--max-steps", str(int(max_steps))]
        out = self.call(["launch", "--resume", str(run.path), *extend, "--json", *self.runs_args()], timeout=300)
        return self._reply("launch --json", out, parse_launch_reply)

    def launch(self, config: RunConfig, gpus: list[int] | None = None, num_processes: int | None = None) -> Launched:
        """The host checks the config (``launch --dry-run``: the files it names, its GPUs, its disk), then starts
        it. Raises LaunchError, with the field a problem concerns. Blocks: a worker's."""
        # notify URLs are secrets: on stdin (--config -), never on the host's command line, where ps shows them
        secret = json.dumps({"notify": list(config.notify)}).encode() if config.notify else None
        words = launch_words(dataclasses.replace(config, notify=[]) if secret else config, gpus, num_processes)
        try:
            verdict = self.check_launch(words, secret)
        except RemoteError as exc:
            raise LaunchError(f"cannot launch on {self.name}", str(exc)) from None
        except HostError as exc:
            raise LaunchError(f"cannot reach {self.name}", str(exc)) from None
        if not verdict.ok:  # the reply is checked: a refusal names at least one problem (all are said, a line each)
            first = verdict.problems[0]
            raise LaunchError(
                f"cannot launch on {self.name}", "\n".join(p.message for p in verdict.problems), first.field
            )
        try:
            return self._reply(
                "launch --json",
                self.call(self._launch_args(words, secret), input=secret, timeout=300),
                parse_launch_reply,
            )
        except HostError as exc:
            raise LaunchError(f"launch on {self.name} failed", str(exc)) from None

    def check_launch(self, argv: list[str], config_text: bytes | None = None) -> LaunchCheck:
        """``launch ARGV --dry-run --json`` there: can the run start, and if not, each problem with its field."""
        self.info()
        done = self.conn.run([*self._launch_args(argv, config_text), "--dry-run"], input=config_text, timeout=300)
        try:
            data = loads(done.stdout)
        except ValueError:
            said = [line for line in done.stderr.decode(errors="replace").splitlines() if line.strip()]
            raise RemoteError(
                f"host {self.name}: {said[-1] if said else 'launch --dry-run printed no verdict'}"
            ) from None
        return self._parsed("launch --dry-run --json", data, parse_launch_check)

    def _launch_args(self, argv: list[str], config_text: bytes | None) -> list[str]:
        return ["launch", *argv, *(["--config", "-"] if config_text is not None else []), *self.runs_args(), "--json"]

    def logs(self, run: RunRef, follow: bool = False) -> Iterator[str]:
        """The host's ``logs --raw`` of the run, as text (decoded here; showing it safely is the caller's).
        RemoteError, once it has ended, when the host's command failed."""
        self.info()
        proc = self.conn.popen(
            ["logs", str(run.path), "--raw", *(["-f"] if follow else [])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        decoder, said = codecs.getincrementaldecoder("utf-8")(errors="replace"), ""
        read_all = False
        try:
            while chunk := os.read(proc.stdout.fileno(), 1 << 16):
                yield decoder.decode(chunk)
            if tail := decoder.decode(b"", final=True):
                yield tail
            said, read_all = proc.stderr.read().decode(errors="replace"), True
        finally:
            if not read_all:  # the caller stopped reading: the host's command is not wanted any more
                proc.terminate()
            code = proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        check_remote(self.conn, code, said)
        if code != 0:
            lines = [line for line in said.splitlines() if line.strip()]
            raise RemoteError(f"host {self.name}: {lines[-1] if lines else f'grpo-tui logs exited with {code}'}")
