"""``grpo-tui logs``: a run's trainer.log, followed with ``-f`` until the run ends."""

from __future__ import annotations

from ..services.live_view import follow_log
from .common import add_host, add_run_ref, resolve


def register(sub) -> None:
    parser = sub.add_parser("logs", help="print a run's trainer.log")
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument("-f", "--follow", action="store_true", help="keep printing until the run ends")
    parser.set_defaults(handler=run, forward=True)


def run(args) -> int:
    follow_log(resolve(args), follow=args.follow)
    return 0
