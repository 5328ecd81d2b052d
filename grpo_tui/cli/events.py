"""``grpo-tui events``: a run's events as JSON lines with their byte offsets, the stream remote viewers read.

Each line is ``{"offset": O, "end": E, "event": {...}}``; ``--from E`` continues after that event, so a
reader that lost its connection resumes with nothing lost and nothing twice. ``--mirror`` streams the whole
folder instead (docs/hosts.md): what ``--host`` viewers keep their local copy with.
"""

from __future__ import annotations

import sys

from grpo_tui.services.serving.event_feed import event_lines, mirror_lines

from ..safe_text import json_bytes
from .common import add_host, add_run_ref, resolve


def register(sub) -> None:
    parser = sub.add_parser(
        "events",
        help="print a run's events as JSON lines with their byte offsets",
        description='Print a run\'s events as JSON lines, {"offset", "end", "event"}; with '
        "--follow keep printing until the run ends. --from E resumes after the event that ended at E.",
    )
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument(
        "--from",
        dest="start",
        type=int,
        default=0,
        metavar="OFFSET",
        help="byte offset in events.jsonl to start at (default: 0, the whole history)",
    )
    parser.add_argument("-f", "--follow", action="store_true", help="keep printing until the run is no longer live")
    parser.add_argument(
        "--mirror",
        action="store_true",
        help="stream the whole run folder (appended bytes of events, samples and log, state, config, "
        "status, GPUs) for a viewer that keeps a copy of it",
    )
    parser.add_argument(
        "--from-samples", type=int, default=0, metavar="OFFSET", help="with --mirror: samples.jsonl offset"
    )
    parser.add_argument("--from-log", type=int, default=0, metavar="OFFSET", help="with --mirror: trainer.log offset")
    parser.set_defaults(handler=run, forward=True)


def run(args) -> int:
    folder = resolve(args)
    if args.start < 0:
        args.start = 0
    if args.mirror:
        offsets = {
            "events.jsonl": args.start,
            "samples.jsonl": max(0, args.from_samples),
            "trainer.log": max(0, args.from_log),
        }
        lines = mirror_lines(folder, offsets, follow=args.follow)
    else:
        lines = event_lines(folder, args.start, follow=args.follow)
    out = sys.stdout.buffer
    for line in lines:
        out.write(json_bytes(line) + b"\n")
        out.flush()
    return 0
