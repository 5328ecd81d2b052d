"""``grpo-tui stop``: graceful with a checkpoint, then TERM/KILL of every process the run started."""

from __future__ import annotations

import json

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
                          "forced": report.forced, "left": report.left,
                          "status": report.status.value if report.status else None, "message": report.describe()}))
        return 1 if report.left else 0
    if not args.force:
        print(f"stopping run {folder.run_id}: finishing the current step and saving a checkpoint "
              f"(up to {args.timeout:.0f}s, then forced) ...", flush=True)
    report = stop_run(folder, force=args.force, timeout=args.timeout)
    print(report.describe())
    return 1 if report.left else 0
