"""``grpo-tui mcp --http``: streamable HTTP on 127.0.0.1 only, refused without the bearer token, served with it.

The server is the installed command in a child process; the client is the SDK's ``streamable_http_client`` with
an ``httpx2`` client that carries (or not) the token.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import psutil
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.run_fixtures import make_finished_run

from ..helpers import ROOT, free_port, wait_for
from .test_mcp_stdio import FINISHED, check_answer

GRPO_TUI = str(Path(sys.executable).with_name("grpo-tui"))
TOKEN_LINE = re.compile(r"serving streamable HTTP on (http://127\.0\.0\.1:\d+/mcp); .* token (\S+)")


class HttpServer:
    def __init__(self, proc: subprocess.Popen, log: Path):
        self.proc, self.log = proc, log

    def banner(self) -> re.Match | None:
        return TOKEN_LINE.search(self.log.read_text(errors="replace"))


def start(runs: Path, tmp: Path, *args: str, env: dict[str, str] | None = None) -> HttpServer:
    log = tmp / f"mcp-{len(list(tmp.glob('mcp-*.log')))}.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [GRPO_TUI, "mcp", "--runs-dir", str(runs), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
    server = HttpServer(proc, log)
    wait_for(lambda: server.banner() or proc.poll() is not None, timeout=60, show=lambda: log.read_text())
    assert proc.poll() is None, log.read_text()
    return server


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("mcp-http") / "runs"
    make_finished_run(runs, FINISHED)
    return runs


@pytest.fixture(scope="module")
def served(runs, tmp_path_factory) -> Iterator[tuple[HttpServer, str, str]]:
    server = start(runs, tmp_path_factory.mktemp("logs"), "--http", str(free_port()))
    found = server.banner()
    assert found is not None
    try:
        yield server, found.group(1), found.group(2)
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)


async def _list_runs(url: str, token: str | None) -> dict:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("list_runs", {})
                assert not result.is_error and isinstance(result.structured_content, dict)
                return result.structured_content


def test_served_with_the_printed_token_and_bound_to_loopback_only(served):
    server, url, token = served
    answer = anyio.run(_list_runs, url, token)
    check_answer("mcp.list_runs", answer)
    assert [r["run_id"] for r in answer["runs"]] == [FINISHED]
    listening = [c for c in psutil.Process(server.proc.pid).net_connections("inet") if c.status == psutil.CONN_LISTEN]
    assert listening and {c.laddr.ip for c in listening} == {"127.0.0.1"}


def test_refused_without_the_token_or_with_a_wrong_one(served):
    _, url, token = served
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": token}):
        answer = httpx2.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **headers})
        assert answer.status_code == 401, (headers, answer.text)
        assert "bearer token" in answer.text
    with pytest.raises(BaseException):  # noqa: B017 -- the SDK's client fails the way its transport does on a 401
        anyio.run(_list_runs, url, None)


def test_a_token_set_in_the_environment_is_the_one_required(runs, tmp_path):
    token = "a-token-set-by-the-user-1234"
    server = start(runs, tmp_path, "--http", str(free_port()), env={"GRPO_TUI_MCP_TOKEN": token})
    try:
        found = server.banner()
        assert found is not None and token not in server.log.read_text()  # a token the user set is never printed
        assert anyio.run(_list_runs, found.group(1), token)["runs"]
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)
