"""Build the trainer's command line and start it with its output going to the run folder's trainer.log.

Argument lists only, never shell strings. One process runs ``python -m trainer_core worker RUN_DIR``;
several go through ``accelerate launch`` (its torchrun launcher; without a GPU the ranks use gloo). The child's
output goes straight to a file, not a pipe, so it can never block on a full pipe or die with its parent.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_command(run_dir: Path, num_processes: int = 1, *, python: str | None = None,
                   accelerate_config: str | None = None, port: int | None = None) -> list[str]:
    python = python or sys.executable
    worker = ["-m", "trainer_core", "worker", str(run_dir)]
    if num_processes <= 1 and not accelerate_config:
        return [python, *worker]
    cmd = [python, "-m", "accelerate.commands.launch"]
    if accelerate_config:
        cmd += ["--config_file", accelerate_config]
    cmd += ["--num_processes", str(num_processes), "--main_process_port", str(port or free_port())]
    if num_processes > 1 and not accelerate_config:
        # accelerate's torchrun-based launcher; on a machine without GPUs the ranks join a gloo group
        cmd.append("--multi_gpu")
    return [*cmd, *worker]


def worker_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env.update(extra or {})
    return env


def start_worker(cmd: list[str], log_file: Path, *, detached: bool, env: dict | None = None, cwd=None) -> subprocess.Popen:
    """Start the trainer; ``detached`` puts it in its own session, safe from hang-ups and the launcher's death."""
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=fd, stderr=subprocess.STDOUT, env=env or worker_env(), cwd=cwd,
            start_new_session=detached, close_fds=True,
        )
    finally:
        os.close(fd)
