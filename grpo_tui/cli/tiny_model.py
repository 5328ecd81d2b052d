"""``grpo-tui tiny-model``: a tiny causal LM and tokenizer, built offline (tests and the demo use it).

Built in a child process (``python -m trainer_core tiny-model``), so this one stays torch-free. The child also
decides whether a cached model is current, so the format of the cache is known in one place; where the demo's
model is cached, and building it there, is ``services/lifecycle/tiny_model.py`` (the launch form's preset uses it).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from grpo_tui.services.lifecycle.tiny_model import BUILD, VARIANT_DIRS, cached_tiny_model

from .common import BadInput, needs_trainer

__all__ = ["VARIANT_DIRS", "cached_tiny_model", "register", "run"]


def register(sub) -> None:
    parser = sub.add_parser(
        "tiny-model",
        help="write a tiny causal LM and tokenizer, trained for a few seconds on "
        "synthetic sentences (no network needed)",
    )
    parser.add_argument("output_dir", type=Path)
    parser.add_argument(
        "--random",
        action="store_true",
        help="skip the pre-training and keep the random weights: it builds faster and writes byte "
        "soup that never ends, which is what tests of the truncation and KL warnings want",
    )
    parser.add_argument(
        "--for-vllm",
        action="store_true",
        help="build it 128 wide (attention heads of 32), so that vLLM can serve it on a CPU: vLLM's CPU attention "
        "needs head_dim 32 or more, and the default model's heads are 16",
    )
    parser.add_argument(
        "--for-agent",
        action="store_true",
        help="build the agentic demo's model: pre-trained (about a minute on a CPU) on the hotel agent's tool-call "
        "transcripts alone, so that it copies a request's room and nights into a call, but seldom calls",
    )
    parser.set_defaults(handler=run)


def run(args) -> int:
    needs_trainer("tiny-model")
    if args.for_vllm and args.for_agent:
        raise BadInput("--for-vllm and --for-agent build different models; choose one")
    if args.random and args.for_agent:
        raise BadInput("--for-agent is a pre-trained model; drop --random")
    flags = [
        flag
        for flag, on in (("--random", args.random), ("--for-vllm", args.for_vllm), ("--for-agent", args.for_agent))
        if on
    ]
    return subprocess.call([*BUILD, str(args.output_dir), *flags])
