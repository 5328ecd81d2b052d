"""``grpo-tui logs``: a run's trainer.log, followed with ``-f`` until the run ends."""

from __future__ import annotations

from ..executors.base import RunAt
from .common import add_host, add_run_ref, resolve


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
    from .remote import executors

    folder = resolve(args)  # a run here: with --host the command line was handed to that host (cli/remote.forward)
    return executors(args).local.logs(RunAt(folder.run_id, folder.path), follow=args.follow, raw=args.raw)
