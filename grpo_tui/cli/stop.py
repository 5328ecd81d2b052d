"""``grpo-tui stop``: graceful with a checkpoint, then TERM/KILL of every process the run started.

Exit code 1 when a process is left after KILL, or when something on record was refused (a process that
does not carry the run's marker, a malformed Slurm job id): the run may still be running and the user
should look. With ``--json`` the refusal is also said on stderr, which is what a remote caller shows.
"""

from __future__ import annotations

import json
import sys

from ..safe_text import clean
from ..services.supervisor import stop_run
from .common import add_host, add_run_ref, resolve


def register(sub) -> None:
    parser = sub.add_parser("stop", help="stop a run: graceful with a checkpoint, then TERM/KILL of every process it started")
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument("--force", action="store_true", help="skip the graceful stage")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="S",
                        help="seconds to wait for the graceful stop (a step plus a checkpoint save) (default: 300)")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.set_defaults(handler=run, forward=True)


def run(args) -> int:
    folder = resolve(args)
    if args.json:
        report = stop_run(folder, force=args.force, timeout=args.timeout)
        print(json.dumps({"run_id": report.run_id, "was_running": report.was_running, "graceful": report.graceful,
                          "forced": report.forced, "left": report.left, "refused": report.refused,
                          "status": report.status.value if report.status else None, "message": report.describe()}))
        if report.refused:
            print(f"error: {clean(report.describe())}", file=sys.stderr)
        return 1 if report.failed else 0
    if not args.force:
        print(f"stopping run {clean(folder.run_id)}: finishing the current step and saving a checkpoint "
              f"(up to {args.timeout:.0f}s, then forced) ...", flush=True)
    report = stop_run(folder, force=args.force, timeout=args.timeout)
    print(clean(report.describe()))
    return 1 if report.failed else 0
