"""The vLLM generation server a run starts for itself in server mode, and stops with itself.

``trl vllm-serve`` binds 0.0.0.0 unless told otherwise, so the command always carries
``--host 127.0.0.1``. The server's output goes to ``vllm_server.log`` in the run folder; when it does not
become healthy in time the error quotes the end of that log. ``GRPO_TUI_VLLM_SERVE`` may name another
executable with the same arguments and health endpoint (a test stand-in on machines without a GPU).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .contract.config.ports import SERVE_OVERRIDE_ENV
from .contract.config.run_config import RunConfig

HEALTH_PATH = "/health/"


class ServerError(RuntimeError):
    pass


def serve_executable() -> list[str]:
    override = os.environ.get(SERVE_OVERRIDE_ENV)
    if override:
        return [override] if not override.endswith(".py") else [sys.executable, override]
    local = Path(sys.executable).with_name("trl")
    found = str(local) if local.exists() else shutil.which("trl")
    if not found:
        raise ServerError("the 'trl' command was not found; install the vllm extra: pip install 'grpo-tui[vllm]'")
    return [found, "vllm-serve"]


def server_command(config: RunConfig, port: int, executable: list[str] | None = None) -> list[str]:
    tp = config.vllm_tensor_parallel_size
    cmd = [
        *(executable or serve_executable()),
        "--model",
        config.model,
        "--tensor-parallel-size",
        str(tp),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    data_parallel = config.vllm_server_gpus // tp
    if data_parallel > 1:
        cmd += ["--data-parallel-size", str(data_parallel)]
    return cmd


@dataclass
class RunningServer:
    process: subprocess.Popen
    url: str
    log: Path


def start(cmd: list[str], env: dict, log: Path, port: int) -> RunningServer:
    from .contract.run.process import spawn_logged

    return RunningServer(spawn_logged(cmd, log, env), f"http://127.0.0.1:{port}", log)


def wait_healthy(server: RunningServer, timeout: float, interval: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise ServerError(
                f"the vLLM server exited with code {server.process.returncode} before it was ready.\n"
                f"{_tail(server.log)}"
            )
        try:
            with urllib.request.urlopen(server.url + HEALTH_PATH, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(interval)
    raise ServerError(
        f"the vLLM server was not healthy at {server.url}{HEALTH_PATH} after {timeout:.0f}s.\n{_tail(server.log)}"
    )


def _tail(log: Path, lines: int = 20) -> str:
    try:
        text = log.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return "(no server log)"
    return f"last lines of {log.name}:\n" + "\n".join("  " + line for line in text)
