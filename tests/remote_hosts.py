"""Remote hosts for tests: the real sshd of ``tests/sshd.py`` as two GPU boxes, a dead one and a stranger.

``remote`` (module scope) writes a hosts file whose ``command`` is this checkout's grpo-tui, gives the
"remote" runs their own folders, and points this side's control sockets and mirrors at a private temp dir.
``RemoteHosts.cli`` runs ``grpo-tui`` with that environment. Teardown ends every SSH master and every run
left in the remote runs folders, so nothing outlives the module.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from tests.helpers import PATTERN_FLAGS, cli
from tests.sshd import SshServer, sshd  # noqa: F401  (the fixture, re-exported for test modules)


class RemoteHosts:
    def __init__(self, server: SshServer, remote_env: dict[str, str] | None = None):
        self.server = server
        self.dir = Path(tempfile.mkdtemp(prefix="gh", dir="/tmp"))  # short: control socket paths
        self.dir.chmod(0o700)
        self.runs = self.dir / "remote"
        self.local_runs = self.dir / "local"
        command = str(Path(sys.executable).with_name("grpo-tui"))
        self.hosts_file = server.write_hosts_file(
            self.dir / "hosts.yaml",
            command,
            str(self.runs),
            env={"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **(remote_env or {})},
        )
        self.env = {
            "GRPO_TUI_HOSTS": str(self.hosts_file),
            "GRPO_TUI_SSH_DIR": str(self.dir / "ssh"),
            "XDG_CACHE_HOME": str(self.dir / "cache"),
            "GRPO_TUI_RUNS_DIR": str(self.local_runs),
        }

    def cli(self, *args: str, **kwargs):
        return cli(*args, env={**self.env, **kwargs.pop("env", {})}, **kwargs)

    def launch(self, model: str, *extra: str, host: str = "gpubox") -> str:
        done = self.cli("launch", "--host", host, "--model", model, *PATTERN_FLAGS, "--json", *extra)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["run_id"]

    def run_folder(self, run_id: str, host: str = "gpubox") -> Path:
        return self.runs / host / run_id

    def processes_of(self, folder: Path) -> list[psutil.Process]:
        found = []
        for proc in psutil.process_iter(["cmdline"]):
            with contextlib.suppress(psutil.Error):
                if any(str(folder) in part for part in proc.info["cmdline"] or []):
                    found.append(proc)
        return found

    def close(self) -> None:
        leftovers = [
            p
            for p in psutil.process_iter(["cmdline"])
            if any(str(self.dir) in part for part in (p.info["cmdline"] or []))
        ]
        for proc in leftovers:  # runs still going, SSH masters
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(leftovers, timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def remote(sshd):  # noqa: F811
    hosts = RemoteHosts(sshd)
    try:
        yield hosts
    finally:
        hosts.close()
