"""The sshd fixture behaves like a real remote host: logins, bad host keys, refused ports, quoting, dropped links."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psutil

from tests.helpers import wait_for
from tests.sshd import SshServer, sshd  # noqa: F401


def _start_sleeper(server: SshServer) -> subprocess.Popen:
    return subprocess.Popen(
        ["ssh", "-F", str(server.config), "-o", "BatchMode=yes", "gpubox", "sleep", "60"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _remote_sleep(server: SshServer) -> bool:
    try:
        return any(p.name() == "sleep" for p in psutil.Process(server.pid).children(recursive=True))
    except psutil.Error:
        return False


def test_known_hosts_run_commands(sshd):  # noqa: F811
    for host in ("gpubox", "otherbox"):
        result = sshd.ssh("echo", "hello", host=host)
        assert (result.returncode, result.stdout) == (0, "hello\n"), result.stderr


def test_unknown_host_key_is_refused(sshd):  # noqa: F811
    result = sshd.ssh("true", host="strangerbox")
    assert result.returncode == 255
    assert "Host key verification failed" in result.stderr


def test_dead_port_is_refused(sshd):  # noqa: F811
    result = sshd.ssh("true", host="deadbox")
    assert result.returncode == 255
    assert "Connection refused" in result.stderr


def test_arguments_reach_the_remote_side_as_data(sshd):  # noqa: F811
    planted = Path("/tmp/zz")
    planted.unlink(missing_ok=True)
    args = ["a b", "$(id)", "x; touch /tmp/zz"]
    result = sshd.ssh("printf", "%s\\n", *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == args
    assert not planted.exists()


def test_kill_connections_drops_a_live_connection(sshd):  # noqa: F811
    client = _start_sleeper(sshd)
    try:
        # live: the remote command runs (a connection still in its handshake may not be the one that carries it)
        wait_for(lambda: _remote_sleep(sshd), 10, 0.05, what="the remote command to start")
        assert sshd.kill_connections() >= 1
        assert client.wait(timeout=10) == 255
    finally:
        client.kill()
        client.communicate()


def test_stop_leaves_no_process_and_no_dir():
    server = SshServer.start()
    client = _start_sleeper(server)
    try:
        wait_for(server.connection_pids, 10, 0.05, what="a connection to the server")
        pids = [server.pid, *server.connection_pids()]
        server.stop()
        server.stop()
        client.wait(timeout=10)
    finally:
        client.kill()
        client.communicate()
    assert not psutil.pid_exists(server.pid)
    assert not any(psutil.pid_exists(pid) for pid in pids)
    assert not server.dir.exists()
