"""The real-vLLM environment (.venv-vllm) that tests/integration/test_vllm_cpu.py and test_vllm_evals.py run in, built while the rest of
the suite runs.

``./dev vllm-env`` takes about two minutes from nothing with pip's cache warm, most of it unpacking and writing
3.8 GB. When a session collects a real-vLLM test, the build starts at once at the lowest CPU priority (nice 19), so
it takes the time the other tests leave idle rather than adding its own; the vLLM tests wait for it. Under
pytest-xdist the first worker (gw0) starts it, and a vLLM test on another worker waits for it through the lock of
``./dev vllm-env``. It returns at once when .venv-vllm is current. ``GRPO_TUI_VLLM_TESTS=0`` skips the real-vLLM
tests, and nothing is built.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from .helpers import ROOT

OPT_OUT = "GRPO_TUI_VLLM_TESTS"
TEST_FILES = ("test_vllm_cpu.py", "test_vllm_evals.py")
BUILD_TIMEOUT = 1800  # a cold pip cache on a busy machine: measured 728 s
VENV_BIN = ROOT / ".venv-vllm" / "bin"
_BUILD = pytest.StashKey[tuple[subprocess.Popen, object]]()


def skipped() -> bool:
    return os.environ.get(OPT_OUT) == "0"


def start(session: pytest.Session) -> None:
    """Start ``./dev vllm-env`` in the background when the session will run a real-vLLM test."""
    if skipped() or not any(item.path.name in TEST_FILES for item in session.items):
        return
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
        return
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(
        ["nice", "-n", "19", str(ROOT / "dev"), "vllm-env"],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        start_new_session=True,  # a stop reaches pip under the script
    )
    session.config.stash[_BUILD] = (process, log)


def ready(config: pytest.Config) -> Path:
    """.venv-vllm/bin once the build is done: the background build's output if it failed. Where this process
    started none, ``./dev vllm-env`` waits for the one another worker runs, or builds."""
    if _BUILD not in config.stash:
        subprocess.run([str(ROOT / "dev"), "vllm-env"], check=True, timeout=BUILD_TIMEOUT)
        return VENV_BIN
    process, log = config.stash[_BUILD]
    code = process.wait(timeout=BUILD_TIMEOUT)
    if code != 0:
        log.seek(0)
        pytest.fail(f"./dev vllm-env exited {code}:\n{log.read().decode(errors='replace')[-4000:]}")
    return VENV_BIN


def stop(session: pytest.Session) -> None:
    """A build still running when the session ends (its tests deselected or failed first) is stopped; the next
    ``./dev vllm-env`` starts it again (its stamp is written only at the end)."""
    if _BUILD not in session.config.stash:
        return
    process, log = session.config.stash[_BUILD]
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    log.close()
