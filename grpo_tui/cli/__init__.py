"""The ``grpo-tui`` command line: one module per command, each holding its parser and its handler.

Nothing in this process imports torch, transformers, TRL, datasets or peft: training happens in the run's
own processes, and everything here reads run folders and sends signals.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..safe_text import clean
from . import (
    checkpoints,
    demo,
    evaluate,
    events,
    export,
    hosts,
    info,
    inspect,
    job_start,
    launch,
    logs,
    mcp,
    merge,
    notify_test,
    rollback,
    runs,
    serve,
    stop,
    tiny_model,
    train,
    watch,
)
from .common import EXIT_BAD_INPUT, BadInput, add_theme, run_app, runs_dir_help
from .remote import forward, is_remote

COMMANDS = (
    train,
    launch,
    inspect,
    runs,
    stop,
    rollback,
    logs,
    watch,
    serve,
    checkpoints,
    events,
    merge,
    evaluate,
    export,
    hosts,
    notify_test,
    info,
    mcp,
    tiny_model,
    demo,
    job_start,
)


class _Parser(argparse.ArgumentParser):
    """A command's parser: no abbreviated flags either."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grpo-tui",
        description="Configure, launch, watch and stop GRPO fine-tuning runs. "
        "Without a command, opens the app on the list of runs.",
        allow_abbrev=False,
    )
    parser.add_argument("--runs-dir", dest="root_runs_dir", metavar="DIR", default=None, help=runs_dir_help())
    add_theme(parser, dest="root_theme")
    # no abbreviated flags: `--host` must be spelled out to be kept off the command a host runs (cli/remote.py)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        if args.command is None:
            return run_app(args.root_runs_dir, args.root_theme)
        if getattr(args, "forward", False) and is_remote(args):
            return forward(args)
        return args.handler(args)
    except BadInput as exc:
        print(f"error: {clean(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # output piped into `head` and the like: stop quietly, as other command-line tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
