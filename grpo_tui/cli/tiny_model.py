"""``grpo-tui tiny-model``: a tiny random causal LM and tokenizer, built offline (tests and the demo use it).

Built in a child process, so this one stays torch-free.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BUILD = "import sys; from trainer_core.tiny_model import build_tiny_model; print(build_tiny_model(sys.argv[1]))"


def register(sub) -> None:
    parser = sub.add_parser("tiny-model", help="write a tiny random causal LM and tokenizer (no network needed)")
    parser.add_argument("output_dir", type=Path)
    parser.set_defaults(handler=run)


def run(args) -> int:
    return subprocess.call([sys.executable, "-c", BUILD, str(args.output_dir)])


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "grpo-tui"


def cached_tiny_model() -> Path:
    """The demo's tiny model, built once into the cache."""
    path = cache_dir() / "tiny-model"
    if not (path / ".grpo-tui-tiny-model").exists():
        print(f"building the tiny demo model in {path} ...", flush=True)
        subprocess.run([sys.executable, "-c", BUILD, str(path)], check=True, stdout=subprocess.DEVNULL)
    return path
