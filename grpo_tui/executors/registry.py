"""Which executor reaches which place: one ``ExecutorRegistry`` per app (or command), one executor per host.

``get(name)`` is the executor of this machine for ``local`` (or None, as ``RunInfo.host`` says of a run
here) and, for a host, the executor its hosts-file entry names (``executor:``, default ``ssh``), made the
first time it is asked for and reused after, so a host's cached answers (its ``info``) and its SSH connection
are shared by every screen and worker. A name that is not in the hosts file is a plain SSH destination, as
``--host`` takes it. Adding a kind of executor is one module and one line in ``EXECUTORS``
(docs/architecture.md, "Executors").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from .base import Executor
from .hosts import LOCAL, Host, HostError, find_host, hosts_file, load_hosts
from .local import LocalExecutor
from .ssh import SshExecutor


class ExecutorFactory(Protocol):
    """How a kind of executor is made for a host of the hosts file."""

    def __call__(
        self,
        host: Host,
        runs_dir: str | None = None,
        interactive: bool = False,
        on_problem: Callable[[str], None] | None = None,
    ) -> Executor: ...


EXECUTORS: dict[str, ExecutorFactory] = {
    "ssh": SshExecutor,  # a host driven through its own grpo-tui over SSH (docs/hosts.md)
}


class ExecutorRegistry:
    """The executors of this machine (``runs_dir``) and of the hosts (``hosts``; None: the hosts file, read
    when a host is first asked for). ``host_runs_dir``: the runs folder on every host (``--runs-dir`` with
    ``--host``); ``interactive``: ssh may prompt on the terminal; ``on_problem``: told of rows a host left out."""

    def __init__(
        self,
        runs_dir: str | Path | None = None,
        hosts: dict[str, Host] | None = None,
        *,
        host_runs_dir: str | None = None,
        interactive: bool = False,
        on_problem: Callable[[str], None] | None = None,
    ):
        self.local = LocalExecutor(runs_dir)
        self._hosts = None if hosts is None else dict(hosts)
        self.host_runs_dir, self.interactive, self.on_problem = host_runs_dir, interactive, on_problem
        self._made: dict[str, Executor] = {}
        self._lock = threading.Lock()

    @property
    def hosts(self) -> dict[str, Host]:
        """The configured hosts, in file order (HostError for a bad hosts file)."""
        with self._lock:
            if self._hosts is None:
                self._hosts = load_hosts()
            return self._hosts

    def get(self, name: str | None = None) -> Executor:
        """The executor of ``name`` (None or ``local``: this machine); HostError for a name that cannot be one."""
        if name is None or name == LOCAL:
            return self.local
        hosts = self.hosts
        with self._lock:
            made = self._made.get(name)
            if made is None:
                host = find_host(name, hosts)
                factory = EXECUTORS.get(host.executor)
                if factory is None:
                    raise HostError(
                        f"{hosts_file()}: host {host.name!r}: executor {host.executor!r} is not one this "
                        f"grpo-tui has; known: {', '.join(EXECUTORS)}"
                    )
                made = self._made[name] = factory(
                    host, runs_dir=self.host_runs_dir, interactive=self.interactive, on_problem=self.on_problem
                )
            return made
