"""``grpo-tui rollback``: go back to an earlier checkpoint of a run and go on from there, with changed settings.

The same as ``grpo-tui launch --resume RUN --checkpoint WHICH --set KEY=VALUE`` (cli/starting.py), with a
reason, after stopping the run if it is live (services/lifecycle/rollback.py). With ``--host`` the command is
handed to that host's own grpo-tui, as ``stop`` is (cli/remote.py: every word quoted for the remote shell). A run
submitted to Slurm goes on in a new job of its script (executors/local.py, services/slurm/batch.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainer_core.contract.config.run_config import ConfigError
from trainer_core.contract.run.folder import RunFolder

from ..safe_text import clean
from ..services.lifecycle.rollback import checked_reason, checkpoint_of, stop_first
from .common import BadInput, add_host, add_run_ref, needs_trainer
from .starting import add_set_argument, resume_change, resume_detached


def register(sub) -> None:
    parser = sub.add_parser(
        "rollback",
        help="go back to an earlier checkpoint of a run and go on from there, with changed settings",
        description="Roll a run back to one of its checkpoints and continue it from there, detached, in the same "
        "run folder: a live run is first stopped (gracefully, with a checkpoint). The steps after the checkpoint "
        "are abandoned and the run records the rewind (who asked, why, what changed). The same as "
        "`grpo-tui launch --resume RUN --checkpoint WHICH --set KEY=VALUE`; a run submitted to Slurm goes on in a new "
        "job (docs/slurm.md). "
        "Exit code: 0 started, 1 the stop left a process, 2 bad input (nothing written).",
    )
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument(
        "--to",
        required=True,
        metavar="WHICH",
        help="the checkpoint to go back to: best (by the held-out metric), last, a step number "
        "(grpo-tui checkpoints RUN lists them), or base (start over from the base model at step 0, keeping the "
        "run's history)",
    )
    add_set_argument(parser, when="")
    parser.add_argument("--reason", metavar="TEXT", default=None, help="why, recorded with the rewind")
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds to wait for a live run's graceful stop (a step plus a checkpoint save) (default: 300)",
    )
    parser.add_argument("--json", action="store_true", help="print the started run as JSON")
    parser.set_defaults(
        handler=run,
        forward=True,
        gpus=None,
        num_processes=None,
        accelerate_config=None,
        vllm_port=None,
        vllm_timeout=None,
    )


def run(args: argparse.Namespace) -> int:
    from .remote import find

    needs_trainer("rollback", "roll back on the host that runs it (--host NAME)")
    try:
        checkpoint = checkpoint_of(args.to)
        reason = checked_reason(args.reason)
    except ConfigError as exc:
        raise BadInput(str(exc)) from None
    change = resume_change(args, reason=reason)  # a setting a resume may not change: refused before the stop
    found = find(args)
    try:
        stopped = stop_first(RunFolder(Path(found.path)), timeout=args.timeout)
    except ConfigError as exc:
        print(f"error: {clean(exc)}", file=sys.stderr)
        return 1
    if stopped is not None:
        print(clean(stopped.message), file=sys.stderr, flush=True)
    args.resume, args.checkpoint = found.path, checkpoint
    launched, _ = resume_detached(args, change)
    job = launched.slurm_job_id  # a Slurm run goes on in a new job (services/slurm/batch.py resubmit)
    if args.json:
        print(
            json.dumps(
                {"run_id": launched.run_id, "path": launched.path, "pid": launched.pid}
                | ({"slurm_job_id": job} if job else {})
            )
        )
    else:
        print(
            f"rolled back run {clean(launched.run_id)} to {clean(checkpoint)}"
            + (f" as Slurm job {clean(job)}" if job else "")
            + f"\n  watch:  grpo-tui watch {clean(launched.run_id)}\n  stop:   grpo-tui stop {clean(launched.run_id)}"
        )
    return 0
