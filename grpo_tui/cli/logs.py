"""``grpo-tui logs``: a run's trainer.log, followed with ``-f`` until the run ends."""

from __future__ import annotations

from ..services.live_view import follow_log
from .common import add_host, add_run_ref, resolve


def register(sub) -> None:
    parser = sub.add_parser("logs", help="print a run's trainer.log")
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument("-f", "--follow", action="store_true", help="keep printing until the run ends")
    parser.add_argument("--raw", action="store_true",
                        help="the log's bytes as written, escape sequences included (by default ANSI colour shows as "
                             "colour on a terminal and no other escape sequence is passed on)")
    parser.set_defaults(handler=run, forward=True)


def run(args) -> int:
    follow_log(resolve(args), follow=args.follow, raw=args.raw)
    return 0
