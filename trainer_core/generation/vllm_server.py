"""The vLLM generation server a run starts for itself in server mode, and stops with itself.

``trl vllm-serve`` binds 0.0.0.0 unless told otherwise, so the command always carries
``--host 127.0.0.1``. The server's output goes to ``vllm_server.log`` in the run folder; when it does not
become healthy in time the error quotes the end of that log. ``GRPO_TUI_VLLM_SERVE`` may name another
executable with the same arguments and health endpoint (a test stand-in on machines without a GPU).

The server runs in a session of its own. Killing only its main process leaves vLLM's engine and worker
processes running, with their ``/dev/shm/psm_*`` segments (hundreds of MB), so ``stop`` signals every process of
that session (TERM, then KILL), unlinks the segments that appeared while it ran and that no process maps any
more (``psm_*``, and the ``sem.mp-*`` semaphores of multiprocessing, which its resource tracker would have unlinked
had a KILL not stopped it with the rest of the session), and removes the server's private TMPDIR, where each engine start leaves ZMQ socket files. Measured against
the real ``trl vllm-serve`` on a CPU (tests/integration/test_vllm_cpu.py): TERM stops the whole tree in about
0.4 s and frees the port.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from trainer_core.contract.config.ports import SERVE_OVERRIDE_ENV
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.generation.vllm_cpu_sync import engine_env, make_engine_dirs

__all__ = ["RunningServer", "ServerError", "died", "engine_env", "log_tail", "start", "stop", "wait_healthy"]

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


SHM = Path("/dev/shm")
SEGMENTS = ("psm_*", "sem.mp-*")  # shared memory and named semaphores of Python's multiprocessing


@dataclass
class RunningServer:
    process: subprocess.Popen
    url: str
    log: Path
    tmp: Path | None = None
    """The server's private TMPDIR (its ZMQ socket files), removed by ``stop``."""
    shm_before: set[str] = field(default_factory=set)
    """The /dev/shm segments (``SEGMENTS``) that existed before it started: never ours to unlink."""


def _segments() -> set[str]:
    try:
        return {p.name for pattern in SEGMENTS for p in SHM.glob(pattern)}
    except OSError:
        return set()


def start(cmd: list[str], env: dict, log: Path, port: int, run_dir: Path | None = None) -> RunningServer:
    """Start the server in a session of its own, output to ``log``; with ``run_dir``, its TMPDIR is the run's and
    its vLLM cache grpo-tui's (``engine_env``), unless ``env`` names the cache."""
    from trainer_core.contract.run.process import spawn_logged

    env = dict(env)
    if run_dir is not None:
        env.update(engine_env(run_dir, env))
        make_engine_dirs(env)
    tmp = Path(env["TMPDIR"]) if run_dir is not None else None
    before = _segments()
    return RunningServer(spawn_logged(cmd, log, env, new_session=True), f"http://127.0.0.1:{port}", log, tmp, before)


def died(server: RunningServer) -> str | None:
    """Why the server is gone (its exit code or signal), or None while it runs."""
    code = server.process.poll()
    if code is None:
        return None
    return f"the vLLM server exited with code {code}" if code >= 0 else f"the vLLM server was killed by signal {-code}"


def session_processes(sid: int):
    import psutil

    found = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == sid and proc.pid != os.getpid():
                found.append(proc)
        except (OSError, psutil.Error):
            continue
    return found


def _mapped_segments() -> set[str]:
    mapped: set[str] = set()
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            text = maps.read_text(errors="replace")
        except OSError:
            continue
        mapped.update(line.rsplit("/", 1)[-1] for line in text.splitlines() if "/dev/shm/" in line)
    return mapped


def stop(server: RunningServer, grace: float = 15, extra=()) -> list:
    """Stop the server's whole session (and ``extra`` processes), TERM then KILL after ``grace`` seconds; unlink its
    orphaned shared-memory segments and its socket folder. Returns what is still alive (nothing, normally)."""
    import psutil

    from trainer_core.contract.run.process import terminate

    procs = {p.pid: p for p in [*session_processes(server.process.pid), *extra]}
    try:
        procs.setdefault(server.process.pid, psutil.Process(server.process.pid))
    except psutil.NoSuchProcess:
        pass
    left = terminate(list(procs.values()), grace=grace)
    server.process.poll()
    orphans = _segments() - server.shm_before - _mapped_segments()
    for name in orphans:
        (SHM / name).unlink(missing_ok=True)
    if server.tmp is not None:
        shutil.rmtree(server.tmp, ignore_errors=True)
    return left


def wait_healthy(server: RunningServer, timeout: float, interval: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise ServerError(
                f"the vLLM server exited with code {server.process.returncode} before it was ready.\n"
                f"{log_tail(server.log)}"
            )
        try:
            with urllib.request.urlopen(server.url + HEALTH_PATH, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(interval)
    raise ServerError(
        f"the vLLM server was not healthy at {server.url}{HEALTH_PATH} after {timeout:.0f}s.\n{log_tail(server.log)}"
    )


def log_tail(log: Path, lines: int = 20) -> str:
    try:
        text = log.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return "(no server log)"
    return f"last lines of {log.name}:\n" + "\n".join("  " + line for line in text)
