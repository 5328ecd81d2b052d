"""The demo's tiny model: where it is cached, and building it in a child process (this one never imports torch).

``grpo-tui demo`` and the form's "CPU demo" preset use the same pre-trained tiny model, built once into the user's
cache (``user_cache_dir()/tiny-model``; each variant in a folder of its own). Whether a cached model is current
is decided by the child alone (``python -m trainer_core tiny-model DIR --announce``, which returns at once when
it is), so the cache's format is known in one place. The preset fills in the path at once, and a launch with
that model has it built first, in a worker (``ensure``): a tenth of a second when it is current, minutes on a CPU
the first time.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from trainer_core.contract.config.user_files import user_cache_dir

BUILD = [sys.executable, "-m", "trainer_core", "tiny-model"]
VARIANT_DIRS = {None: "tiny-model", "vllm": "tiny-model-vllm", "agent": "tiny-model-agent"}
LOG_SUFFIX = ".build.log"


def tiny_model_dir(variant: str | None = None) -> Path:
    """Where the tiny model (of ``variant``: None, "vllm" or "agent") is cached; it may not be built yet."""
    return user_cache_dir() / VARIANT_DIRS[variant]


def build_command(path: Path, variant: str | None = None) -> list[str]:
    return [*BUILD, str(path), "--announce", *([f"--for-{variant}"] if variant else [])]


def cached_tiny_model(variant: str | None = None) -> Path:
    """The tiny model, built first when it is not current; the child says "building ..." on this terminal."""
    path = tiny_model_dir(variant)
    sys.stdout.flush()
    subprocess.run(build_command(path, variant), check=True)
    return path


class BuildFailed(Exception):
    """The child could not build the model (or was stopped): the last line it wrote, and its log."""

    def __init__(self, path: Path, last_line: str, log: Path):
        super().__init__(f"could not build the tiny model in {path}: {last_line} (see {log})")
        self.path, self.last_line, self.log = path, last_line, log


def ensure(variant: str | None = None, cancelled: Callable[[], bool] = lambda: False) -> Path:
    """``cached_tiny_model`` for the app, whose terminal the child must not write on: its output goes to a log
    beside the model (``tiny-model.build.log``); BuildFailed when it fails, or when ``cancelled()`` turns true (the
    child is then stopped; a model it left half built is not current, and is built again next time). Blocking: call
    it from a worker."""
    path = tiny_model_dir(variant)
    path.parent.mkdir(parents=True, exist_ok=True)
    log = path.with_name(path.name + LOG_SUFFIX)
    with open(log, "wb") as out:
        child = subprocess.Popen(
            build_command(path, variant), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
        while child.poll() is None:
            if cancelled():
                child.terminate()
                child.wait()
                raise BuildFailed(path, "stopped before it was built", log)
            time.sleep(0.1)
    if child.returncode != 0:
        lines = log.read_text(errors="replace").strip().splitlines()
        raise BuildFailed(path, lines[-1] if lines else f"exit code {child.returncode}", log)
    return path
