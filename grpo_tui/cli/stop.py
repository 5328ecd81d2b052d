"""``grpo-tui stop``: graceful with a checkpoint, then TERM/KILL of every process the run started.

Exit code 1 when a process is left after KILL, or when something on record was refused (a process that
does not carry the run's marker, a malformed Slurm job id): the run may still be running and the user
should look (``executors.base.judge_stop``, the judgement the app's stops get too). With ``--json`` the
refusal is also said on stderr, which is what a remote caller shows; the JSON is ``StopOutcome.to_wire()``
(``services/records/stop_outcome.py``), which a remote caller parses back into the same type.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..executors.base import judge_stop
from ..safe_text import clean
from ..services.lifecycle.stop_request import CLI
from .common import add_host, add_run_ref


def register(sub) -> None:
    parser = sub.add_parser(
        "stop", help="stop a run: graceful with a checkpoint, then TERM/KILL of every process it started"
    )
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument("--force", action="store_true", help="skip the graceful stage")
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds to wait for the graceful stop (a step plus a checkpoint save) (default: 300)",
    )
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    # who asked, when another machine's grpo-tui forwards a stop here (SshExecutor.stop); recorded, cleaned, in
    # the stop request (services/lifecycle/stop_request.py)
    parser.add_argument("--by", default=CLI, metavar="TEXT", help=argparse.SUPPRESS)
    parser.set_defaults(handler=run, forward=True)


def run(args) -> int:
    from .remote import executors, find

    run = find(args)  # a run here: with --host the command line was handed to that host's own grpo-tui
    local = executors(args).local
    if not args.json and not args.force and local.status(run).is_live:  # a finished run gets only the outcome
        print(
            f"stopping run {clean(run.run_id)}: finishing the current step and saving a checkpoint "
            f"(up to {args.timeout:.0f}s, then forced) ...",
            flush=True,
        )
    outcome = local.stop(run, force=args.force, timeout=args.timeout, by=args.by)
    if args.json:
        print(json.dumps(outcome.to_wire()))  # what a remote caller parses (StopOutcome.from_wire)
        if outcome.refused:
            print(f"error: {clean(outcome.message)}", file=sys.stderr)
    else:
        print(clean(outcome.message))
    return 1 if judge_stop(outcome).failed else 0
