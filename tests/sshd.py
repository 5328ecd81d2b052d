"""A real OpenSSH server on 127.0.0.1 for tests of remote hosts.

Stand-ins for ssh hide the parts that break in practice: quoting of remote commands, host key checks, refused
connections and connections that drop mid-command. ``SshServer`` runs ``/usr/sbin/sshd`` from a private temp dir
with throwaway keys and writes a client config with four hosts: ``gpubox`` and ``otherbox`` (both this server),
``strangerbox`` (this server with an unknown host key) and ``deadbox`` (a port where nothing listens).

OpenSSH reads ``~/.ssh`` from the passwd home, not ``$HOME``, so nothing here relies on it: the client is always
run as ``ssh -F <config>``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import psutil
import pytest
import yaml

from trainer_core.contract.config.ports import free_port

from .helpers import wait_for

SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = Path("/run/sshd")
HOSTS = ("gpubox", "otherbox", "strangerbox", "deadbox")


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-N", "", "-t", "ed25519", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )


def _is_sshd(proc: psutil.Process) -> bool:
    try:
        return proc.name() == "sshd" or " ".join(proc.cmdline()).startswith("sshd")
    except psutil.Error:
        return False


class SshServer:
    """A running sshd on a free port of 127.0.0.1 that lets the current user in with a throwaway key."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="gs", dir="/tmp"))
        self.dir.chmod(0o700)
        self.port = free_port()
        self.dead_port = free_port()
        self.config = self.dir / "ssh_config"
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.pid: int | None = None
        self._proc: subprocess.Popen | None = None
        self._orphans: list[psutil.Process] = []
        self._stopped = False

    @classmethod
    def start(cls) -> SshServer:
        server = cls()
        try:
            server._start()
        except BaseException:
            server.stop()
            raise
        return server

    def __enter__(self) -> SshServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    @property
    def log(self) -> str:
        try:
            return (self.dir / "sshd.log").read_text(errors="replace")
        except OSError:
            return ""

    def _start(self) -> None:
        host_key, client_key = self.dir / "hostkey", self.dir / "client_key"
        _keygen(host_key)
        _keygen(client_key)
        shutil.copy(client_key.with_suffix(".pub"), self.dir / "authorized_keys")
        key_type, key_data = host_key.with_suffix(".pub").read_text().split()[:2]
        (self.dir / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {key_type} {key_data}\n")
        (self.dir / "empty_known_hosts").write_text("")
        self._write_sshd_config(host_key)
        self._write_client_config(client_key)
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)

        sshd_config = str(self.dir / "sshd_config")
        check = subprocess.run([SSHD, "-t", "-f", sshd_config], capture_output=True, text=True)
        if check.returncode:
            raise RuntimeError(f"sshd rejects its config:\n{check.stdout}{check.stderr}")
        with open(self.dir / "sshd.log", "wb") as log:
            self._proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", sshd_config],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid = self._proc.pid
        self._wait_listening(timeout=10)

    def _write_sshd_config(self, host_key: Path) -> None:
        lines = [
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {host_key}",
            f"PidFile {self.dir / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "PermitRootLogin prohibit-password",
            "MaxSessions 100",
            "MaxStartups 100",
            "LogLevel VERBOSE",
            "Subsystem sftp internal-sftp",
        ]
        (self.dir / "sshd_config").write_text("\n".join(lines) + "\n")

    def _write_client_config(self, client_key: Path) -> None:
        known, empty = self.dir / "known_hosts", self.dir / "empty_known_hosts"
        ports_and_known = {
            "gpubox": (self.port, known),
            "otherbox": (self.port, known),
            "strangerbox": (self.port, empty),
            "deadbox": (self.dead_port, known),
        }
        blocks = []
        for host, (port, known_hosts) in ports_and_known.items():
            blocks.append(
                "\n".join(
                    [
                        f"Host {host}",
                        "    HostName 127.0.0.1",
                        f"    Port {port}",
                        f"    User {self.user}",
                        f"    IdentityFile {client_key}",
                        "    IdentitiesOnly yes",
                        "    StrictHostKeyChecking yes",
                        f"    UserKnownHostsFile {known_hosts}",
                        "    GlobalKnownHostsFile /dev/null",
                        "    LogLevel ERROR",
                    ]
                )
            )
        self.config.write_text("\n\n".join(blocks) + "\n")

    def _wait_listening(self, timeout: float) -> None:
        def probed() -> int | None:
            """The local port of a connection the server accepted, or None while it refuses them."""
            if self._proc.poll() is not None:
                raise RuntimeError(f"sshd exited with {self._proc.returncode}:\n{self.log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as probe:
                    return probe.getsockname()[1]
            except OSError:
                return None

        where = f"127.0.0.1:{self.port}"
        probe_port = wait_for(probed, timeout, 0.05, what=f"sshd to listen on {where}", show=lambda: self.log)
        # The probe has a server process of its own; a test waiting for connection_pids() must not see it.
        wait_for(
            lambda: f"Connection closed by 127.0.0.1 port {probe_port}" in self.log and not self.connection_pids(),
            timeout,
            0.02,
            what=f"sshd to close the probe's connection on {where}",
            show=lambda: self.log,
        )

    def connection_pids(self) -> list[int]:
        """Pids of the sshd processes that serve connections: the listener's descendants that are sshd itself.

        The shells and commands those processes run for the user are left out, so killing these pids is what a
        dropped network connection does: the client's connection dies, the remote commands are orphaned.
        """
        try:
            descendants = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return []
        return [proc.pid for proc in descendants if _is_sshd(proc)]

    def kill_connections(self) -> int:
        """SIGKILL every connection of this server (see ``connection_pids``); returns how many were killed."""
        try:
            descendants = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return 0
        killed = 0
        for proc in descendants:
            if _is_sshd(proc):
                with contextlib.suppress(psutil.Error):
                    proc.send_signal(signal.SIGKILL)
                    killed += 1
            else:
                # Orphaned remote commands are no longer descendants; stop() still ends them.
                self._orphans.append(proc)
        return killed

    def ssh(self, *remote_args: str, host: str = "gpubox", timeout: float = 30) -> subprocess.CompletedProcess:
        """Run ``REMOTE_ARGS`` on ``host``, each argument passed as data, and capture the output as text."""
        command = [shlex.join(remote_args)] if remote_args else []
        return subprocess.run(
            ["ssh", "-F", str(self.config), "-o", "BatchMode=yes", host, *command],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def write_hosts_file(
        self, path: str | os.PathLike, command: str, runs_dir: str, env: dict[str, str] | None = None
    ) -> Path:
        """Write the app's hosts file with the four hosts; gpubox and otherbox get separate runs folders."""
        hosts = {}
        for host in HOSTS:
            folder = host if host in ("gpubox", "otherbox") else "gpubox"
            hosts[host] = {
                "ssh": host,
                "ssh_config": str(self.config),
                "command": command,
                "runs_dir": f"{runs_dir}/{folder}",
                "env": dict(env or {}),
            }
        path = Path(path)
        path.write_text(yaml.safe_dump(hosts, sort_keys=False))
        path.chmod(0o600)  # load_hosts refuses a hosts file others may write, whatever the umask made it
        return path

    def stop(self) -> None:
        """End sshd, its connections and everything they run, and remove the temp dir. Safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        procs = [proc for proc in self._orphans if proc.is_running()]
        if self._proc is not None:
            with contextlib.suppress(psutil.Error):
                listener = psutil.Process(self._proc.pid)
                procs = [listener, *listener.children(recursive=True), *procs]
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.terminate()
        _, alive = psutil.wait_procs(procs, timeout=3)
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(alive, timeout=3)
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=3)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def sshd():
    """A started ``SshServer``, shared by the tests of one module."""
    if not os.path.exists(SSHD):
        pytest.fail(f"{SSHD} is missing: install openssh-server; ./dev test does it as root")
    server = SshServer.start()
    try:
        yield server
    finally:
        server.stop()
