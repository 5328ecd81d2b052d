"""``grpo-tui logs``: a run's trainer.log, followed with ``-f`` until the run ends.

The run's executor gives the log's text; this command shows it: lines go out whole, through
``safe_text.from_ansi`` (ANSI colour kept as colour on a terminal and dropped in a pipe, no other escape from
the log reaches either), and ``--raw`` writes the text as it is.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TextIO

from rich.console import Console

from ..safe_text import from_ansi
from .common import add_host, add_run_ref


def register(sub) -> None:
    parser = sub.add_parser("logs", help="print a run's trainer.log")
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument("-f", "--follow", action="store_true", help="keep printing until the run ends")
    parser.add_argument(
        "--raw",
        action="store_true",
        help="the log's bytes as written, escape sequences included (by default ANSI colour shows as "
        "colour on a terminal and no other escape sequence is passed on)",
    )
    parser.set_defaults(handler=run, forward=True)


def run(args) -> int:
    from .remote import executors, find

    run = find(args)  # a run here: with --host the command line was handed to that host (cli/remote.forward)
    chunks = executors(args).local.logs(run, follow=args.follow)
    print_log(chunks, sys.stdout, raw=args.raw)
    return 0


def print_log(chunks: Iterable[str], out: TextIO, raw: bool = False) -> None:
    """Write the log's ``chunks`` to ``out`` as they come (flushed after each), shown safely unless ``raw``."""
    printer = _LogPrinter(out, raw)
    for text in chunks:
        printer.add(text)
        out.flush()
    printer.add("", final=True)
    out.flush()


class _LogPrinter:
    def __init__(self, out: TextIO, raw: bool):
        self.out, self.raw, self.pending = out, raw, ""
        self.console = Console(file=out, soft_wrap=True, highlight=False, emoji=False)

    def add(self, text: str, final: bool = False) -> None:
        if self.raw:
            self.out.write(text)
            return
        complete, _, self.pending = (self.pending + text).rpartition("\n")
        if final and self.pending:
            complete, self.pending = f"{complete}\n{self.pending}" if complete else self.pending, ""
        if complete:
            self.console.print(from_ansi(complete))
