"""The ``grpo-tui`` command line: one module per command, each holding its parser and its handler.

Nothing in this process imports torch, transformers, TRL, datasets or peft: training happens in the run's
own processes, and everything here reads run folders and sends signals.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import demo, inspect, launch, logs, merge, runs, stop, tiny_model, train, watch
from .common import EXIT_BAD_INPUT, BadInput, add_theme, run_app, runs_dir_help

COMMANDS = (train, launch, inspect, runs, stop, logs, watch, merge, tiny_model, demo)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grpo-tui", description="Configure, launch, watch and stop GRPO fine-tuning runs. "
        "Without a command, opens the app on the list of runs.")
    parser.add_argument("--runs-dir", dest="root_runs_dir", metavar="DIR", default=None, help=runs_dir_help())
    add_theme(parser, dest="root_theme")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None:
        return run_app(args.root_runs_dir, args.root_theme)
    try:
        return args.handler(args)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # output piped into `head` and the like: stop quietly, as other command-line tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
