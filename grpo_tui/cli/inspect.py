"""``grpo-tui inspect``: generate and score completions before training (the reward-inspection gate)."""

from __future__ import annotations

import subprocess

from grpo_tui.config_flags import add_run_config_arguments
from grpo_tui.services.lifecycle import inspections
from trainer_core.contract.config.hardware import PreflightError
from trainer_core.contract.run.severity import Severity

from .common import BadInput, add_host, add_runs_dir, config_of, creating, needs_trainer
from .starting import refuse


def register(sub) -> None:
    parser = sub.add_parser(
        "inspect",
        help="generate and score completions before training: the reward-inspection gate",
        description="Load the model and environment as training would, generate rl_num_generations completions for "
        "enough prompts, score them, and report the distribution, per-group spread and problems (exceptions, "
        "out-of-range or identical scores, zero-spread groups, a model that never succeeds or always does). "
        "Hardware settings this machine cannot run are refused first (docs/hardware.md; --on-missing fallback). "
        "Exit code: 0 no critical problem, 4 critical problems, 1 the inspection failed, 2 bad input.",
    )
    add_run_config_arguments(parser)
    add_runs_dir(parser)
    add_host(parser)
    parser.add_argument("--samples", type=int, default=64, metavar="N", help="completions to score (default: 64)")
    parser.set_defaults(handler=run, forward=True)


def run(args) -> int:
    needs_trainer("inspect", "inspect on a host that has it (--host NAME)")
    from rich.console import Console

    from ..inspect_report import report

    config = config_of(args)
    with creating():
        try:
            inspection = inspections.create(config, args.runs_dir)
        except PreflightError as exc:  # every hardware problem, a line each
            refuse(exc.problems)
            raise
    print(f"inspecting {args.samples} completions into {inspection.path} ...", flush=True)
    code = subprocess.call(inspections.command(inspection, args.samples))
    summary = inspection.summary()
    if not summary:
        raise BadInput(inspections.no_report(code))
    Console(soft_wrap=False).print(report(summary, inspection.records()))
    print(f"report: {inspection.path / 'summary.json'}  samples: {inspection.path / 'inspection.jsonl'}")
    if summary.get("failed") or code:
        return 1
    return 4 if any(f["severity"] == Severity.CRITICAL for f in summary.get("flags", [])) else 0
