"""``python -m trainer_core tiny-model DIR``: build the tiny offline model in a process of its own.

``grpo-tui tiny-model`` and the demo start it as a child, so the app's process never imports torch. With
``--announce`` (the demo's cache) it prints no path, and says "building ..." before it builds, only when the
folder does not already hold a current model of that kind (the cache's format is known by ``tiny_model.is_built``
alone).
"""

from __future__ import annotations

import argparse

from trainer_core.commands.tiny_model import build_tiny_model, is_built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainer_core tiny-model", description=__doc__)
    parser.add_argument("output_dir")
    parser.add_argument("--random", action="store_true", help="keep the random weights (no pre-training)")
    variant = parser.add_mutually_exclusive_group()
    variant.add_argument("--for-vllm", action="store_true", help="heads of 32, which vLLM's CPU attention needs")
    variant.add_argument("--for-agent", action="store_true", help="the agentic demo's model")
    parser.add_argument("--announce", action="store_true", help="say 'building ...' when it is not built yet")
    args = parser.parse_args(argv)
    kind = {"pretrain": not args.random, "for_vllm": args.for_vllm, "for_agent": args.for_agent}
    if not args.announce:
        print(build_tiny_model(args.output_dir, **kind))
    elif not is_built(args.output_dir, **kind):
        print(f"building the tiny demo model in {args.output_dir} ...", flush=True)
        build_tiny_model(args.output_dir, **kind)
    return 0
