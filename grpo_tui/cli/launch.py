"""``grpo-tui launch``: start a run detached from this terminal, print its id, return."""

from __future__ import annotations

import json

from ..services.supervisor import start_root
from .common import config_of
from .starting import add_start_arguments, create, options, resume


def register(sub) -> None:
    parser = sub.add_parser(
        "launch", help="start a GRPO training detached from this terminal and return",
        description="Start a run in its own session (immune to hang-ups, closed terminals and the death of this "
        "command), print its id and folder, and return. Watch it with 'grpo-tui watch RUN', stop it with 'grpo-tui stop RUN'.",
    )
    add_start_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the run id and folder as JSON")
    parser.set_defaults(handler=run)


def run(args) -> int:
    folder, placement = resume(args) if args.resume else create(config_of(args), args)
    proc = start_root(folder, placement, options(args))
    if args.json:
        print(json.dumps({"run_id": folder.run_id, "path": str(folder.path), "pid": proc.pid}))
    else:
        print(f"launched run {folder.run_id}\n  folder: {folder.path}\n  watch:  grpo-tui watch {folder.run_id}"
              f"\n  stop:   grpo-tui stop {folder.run_id}")
        for note in placement.notes:
            print(f"  note:   {note}")
    return 0
