"""A remote host, driven through its own ``grpo-tui`` over one SSH connection.

Nothing of a run is re-implemented here: listing is the host's ``runs --json``, stopping its ``stop --json``,
launching its ``launch --json`` (the config travels on stdin, so a path in it is a path there), and
watching a local copy of the run folder fed by its ``events --mirror`` (``mirror.py``).
"""

from __future__ import annotations

import threading

from orjson import loads

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


class SshExecutor:
    """Runs on ``host``. ``runs_dir``: the runs folder there (default: the host's setting, else its default)."""

    kind = "ssh"

    def __init__(self, host: Host, runs_dir: str | None = None, interactive: bool = False):
        self.host = host
        self.name = host.name
        self.runs_dir = runs_dir or host.runs_dir
        self.conn = connection(host, interactive)
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

    def info(self) -> dict:
        """The host's version, run format, runs folder and GPUs; checks that both sides speak one run format."""
        if self._info is None:
            try:
                info = loads(self.call(["info", "--json", *self.runs_args()], timeout=60))
            except RemoteError as exc:
                raise HostError(f"host {self.name}: its grpo-tui does not answer `info --json` ({exc}); install the same "
                                "grpo-tui version there as here") from None
            except ValueError:
                raise HostError(f"host {self.name}: `grpo-tui info --json` did not print JSON there; is `command:` "
                                "in the hosts file grpo-tui?") from None
            if info.get("run_format") != FORMAT_VERSION:
                raise HostError(f"host {self.name}: its grpo-tui {info.get('version')} writes run format "
                                f"{info.get('run_format')}, this one reads {FORMAT_VERSION}; install the same grpo-tui "
                                "version on both machines")
            self._info = info
        return self._info

    def list_runs(self, refs: list[str] | None = None) -> list[RunInfo]:
        self.info()
        rows = loads(self.call(["runs", "--json", *self.runs_args(), *(refs or [])], timeout=120))
        return [RunInfo.from_dict(row, host=self.name) for row in rows]

    def find(self, ref: str) -> RunInfo:
        """The run ``ref`` (id, prefix, ``latest``) names on the host."""
        found = self.list_runs([ref])
        if len(found) != 1:
            raise RemoteError(f"host {self.name}: {ref!r} names {len(found)} runs")
        return found[0]

    def mirror(self, run: RunInfo) -> Mirror:
        return Mirror(self.conn, run.run_id, str(run.path))

    def stop(self, run: RunInfo, force: bool = False, timeout: float = 300) -> dict:
        args = ["stop", str(run.path), "--json", "--timeout", str(timeout), *(["--force"] if force else [])]
        return loads(self.call(args, timeout=timeout + 120))

    def resume(self, run: RunInfo) -> dict:
        return loads(self.call(["launch", "--resume", str(run.path), "--json", *self.runs_args()], timeout=300))

    def launch(self, argv: list[str], config_text: bytes | None = None) -> dict:
        """``launch ARGV --json`` there; ``config_text``: a config file's bytes, read there as ``--config -``."""
        self.info()
        return loads(self.call(self._launch_args(argv, config_text), input=config_text, timeout=300))

    def check_launch(self, argv: list[str], config_text: bytes | None = None) -> dict:
        """``launch ARGV --dry-run --json`` there: ``{"ok", "problems": [{"field", "message"}], "placement"}``."""
        self.info()
        done = self.conn.run([*self._launch_args(argv, config_text), "--dry-run"], input=config_text, timeout=300)
        try:
            return loads(done.stdout)
        except ValueError:
            said = [line for line in done.stderr.decode(errors="replace").splitlines() if line.strip()]
            raise RemoteError(f"host {self.name}: {said[-1] if said else 'launch --dry-run printed no verdict'}") from None

    def _launch_args(self, argv: list[str], config_text: bytes | None) -> list[str]:
        return ["launch", *argv, *(["--config", "-"] if config_text is not None else []), *self.runs_args(), "--json"]
