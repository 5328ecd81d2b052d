"""``grpo-tui merge``: fold a run's LoRA adapters into the base model, or export a full fine-tune.

The work happens in a ``python -m trainer_core merge`` child process: this one stays torch-free.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .common import add_host, add_run_ref, needs_trainer, resolve, run_config


def register(sub) -> None:
    parser = sub.add_parser(
        "merge", help="merge a run's LoRA adapters into the base model (or export a full fine-tune)"
    )
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument(
        "--output", required=True, type=Path, metavar="DIR", help="folder for the merged model and tokenizer"
    )
    parser.add_argument(
        "--checkpoint",
        default=None,
        metavar="WHICH",
        help="merge this one: best (by the held-out metric), final, last or a step number N (checkpoint-N), refused "
        "if it is incomplete (default: the completed run's final model, else the newest checkpoint whose weights "
        "are whole)",
    )
    parser.set_defaults(handler=run, forward=True)


def run(args) -> int:
    needs_trainer("merge", "merge on the run's host (--host NAME)")
    folder = resolve(args)
    run_config(folder)  # a broken config.yaml is named here, not in the child's traceback
    cmd = [sys.executable, "-m", "trainer_core", "merge", str(folder.path), "--output", str(args.output)]
    if args.checkpoint is not None:
        cmd += ["--checkpoint", str(args.checkpoint)]
    return subprocess.call(cmd)
