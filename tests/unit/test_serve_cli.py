"""`grpo-tui serve`: the command each browser's app runs is quoted for /bin/sh, a non-loopback address needs
--expose, and every page and websocket needs the printed token (a real server on a free port)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp
import pytest

from grpo_tui.cli.common import BadInput
from grpo_tui.cli.serve import check_address, served_command
from grpo_tui.services.serving.web_server import is_loopback, page_url

from ..helpers import cli, free_port, scaled, wait_for

HOSTILE = "runs $(touch pwned) `touch pwned2` 'q' \"d\" ;x& |y *\n\\ $HOME %s"
ECHO_ARGV = [sys.executable, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))"]


def test_the_served_command_passes_a_hostile_runs_dir_and_theme_through_sh_word_for_word(tmp_path):
    runs_dir = tmp_path / HOSTILE
    command = served_command(runs_dir, "grpo-light; touch pwned3", program=ECHO_ARGV)
    shown = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert json.loads(shown.stdout) == ["--runs-dir", str(runs_dir), "--theme", "grpo-light; touch pwned3"]
    assert not list(tmp_path.iterdir()), "the shell ran part of the path"


def test_the_served_command_runs_this_interpreters_app_and_leaves_the_theme_out_when_unset(tmp_path):
    command = served_command(tmp_path, None)
    assert command.startswith("exec ") and sys.executable in command and "-m grpo_tui --runs-dir" in command
    assert "--theme" not in command


def test_only_loopback_addresses_go_without_expose():
    for host in ("127.0.0.1", "127.0.1.1", "::1", "[::1]", "localhost"):
        assert is_loopback(host)
        check_address(host, 8000, expose=False)
    for host in ("0.0.0.0", "::", "10.0.0.5", "box.example.org"):
        assert not is_loopback(host)
        with pytest.raises(BadInput, match="--expose"):
            check_address(host, 8000, expose=False)
        check_address(host, 8000, expose=True)
    with pytest.raises(BadInput, match="from 1 to 65535"):
        check_address("127.0.0.1", 70000, expose=False)


def test_the_printed_url_names_this_machine_when_it_listens_on_every_address():
    assert page_url("127.0.0.1", 8000, "T") == "http://127.0.0.1:8000/?token=T"
    assert page_url("::1", 8001, "T") == "http://[::1]:8001/?token=T"
    assert page_url("0.0.0.0", 8000, "T") == f"http://{socket.getfqdn()}:8000/?token=T"


def test_a_non_loopback_host_without_expose_exits_2_saying_what_to_do(tmp_path):
    proc = cli("serve", "--host", "0.0.0.0", "--runs-dir", str(tmp_path), cwd=tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "--host 0.0.0.0 would let other machines reach the app: add --expose" in proc.stderr
    assert "ssh -L 8000:127.0.0.1:8000" in proc.stderr and "Traceback" not in proc.stderr


def test_a_port_in_use_exits_2_naming_it(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = cli("serve", "--port", str(port), "--runs-dir", str(tmp_path), cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and f"cannot listen on 127.0.0.1 port {port}" in proc.stderr, proc.stderr


def status_of(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers.get("Set-Cookie", "")
    except urllib.error.HTTPError as exc:
        return exc.code, ""


async def socket_status(url: str, cookies: dict[str, str], origin: str) -> int:
    async with aiohttp.ClientSession(cookies=cookies) as session:
        try:
            async with session.ws_connect(url, headers={"Origin": origin}, timeout=aiohttp.ClientWSTimeout(ws_close=5)):
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


def test_exposed_every_page_and_websocket_needs_the_token(tmp_path):
    port = free_port()
    runs = ["--runs-dir", str(tmp_path / "runs")]
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "grpo_tui", "serve", "--host", "0.0.0.0", "--expose", "--port", str(port), *runs],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=tmp_path,
            start_new_session=True,
        )
    try:

        def printed_url() -> re.Match | None:
            assert server.poll() is None, log.read_text()
            return re.search(r"^open http://(\S+):(\d+)/\?token=(\S+)$", log.read_text(), re.M)

        printed = wait_for(printed_url, 60, what="grpo-tui serve to print its URL", show=log.read_text)
        assert printed.group(1) == socket.getfqdn() and printed.group(2) == str(port)
        token = printed.group(3)
        assert "read-only" in log.read_text()
        base = f"http://127.0.0.1:{port}"

        assert status_of(f"{base}/")[0] == 403
        assert status_of(f"{base}/?token=wrong")[0] == 403
        assert status_of(f"{base}/?token=%C3%A9")[0] == 403  # not ASCII: refused, not a crash
        assert status_of(f"{base}/ws")[0] == 403
        assert status_of(f"{base}/download/anything")[0] == 403
        assert status_of(f"{base}/static/js/textual.js")[0] == 200  # the package's own files are public
        status, cookie = status_of(f"{base}/?token={token}")
        assert status == 200
        assert f"grpo_tui_serve_{port}={token}" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert status_of(f"{base}/", {"Cookie": f"grpo_tui_serve_{port}={token}"})[0] == 200

        ws = f"ws://127.0.0.1:{port}/ws"
        assert asyncio.run(socket_status(ws, {}, base)) == 403
        assert asyncio.run(socket_status(ws, {f"grpo_tui_serve_{port}": token}, "http://evil.example")) == 403
        assert asyncio.run(socket_status(ws, {f"grpo_tui_serve_{port}": token}, base)) == 101
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=scaled(20))
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            raise
    assert server.returncode == 0, log.read_text()
    assert Path(tmp_path / "runs").exists() is False  # serving creates nothing in the runs dir
