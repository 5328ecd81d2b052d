"""``grpo-tui train``: run GRPO and print one line per step until it ends."""

from __future__ import annotations

from grpo_tui.services.lifecycle.foreground import run_foreground

from .common import config_of, needs_trainer
from .starting import add_start_arguments, create, hide_notify_urls, options, resume


def register(sub) -> None:
    parser = sub.add_parser(
        "train",
        help="run a GRPO training and print its metrics until it ends",
        description="Run GRPO and print one line per step until it ends. Ctrl-C (or SIGTERM) stops after the current "
        "step with a checkpoint; a second Ctrl-C stops at once. Settings this machine cannot run (flash attention "
        "without flash-attn, bf16 on a CPU, vLLM not installed, ...) are refused before anything loads, each named "
        "with its fix; --on-missing fallback runs with their safe fallbacks instead (docs/hardware.md). "
        "Exit code: 0 completed, 3 stopped, 1 failed, 2 bad input (also an environment, dataset, tool or setting the "
        "trainer refuses before training: one message says what, where and the fix; the run folder records it).",
    )
    add_start_arguments(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    needs_trainer("train", "launch on a host that has it (grpo-tui launch --host NAME)")
    hide_notify_urls(args)  # `train` lives as long as its run: no URL may stay on its command line
    folder, placement = resume(args) if args.resume else create(config_of(args), args)
    return run_foreground(folder, placement, options(args))
