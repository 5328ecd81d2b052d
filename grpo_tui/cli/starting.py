"""Creating or resuming a run from command-line flags: shared by ``train``, ``launch`` and ``demo``."""

from __future__ import annotations

import argparse
import sys

from grpo_tui.config_flags import add_run_config_arguments
from trainer_core.contract.config.placement import Placement, parse_gpus
from trainer_core.contract.config.run_config import ConfigError, RunConfig, config_fields
from trainer_core.contract.run.folder import RunFolder

from ..safe_text import clean
from ..services import hardware
from ..services.supervisor import LaunchOptions, create_run, plan_resume, world_size
from .common import BadInput, add_runs_dir, creating, resolve


def add_start_arguments(parser: argparse.ArgumentParser) -> None:
    """Every RunConfig flag, the runs dir, placement and --resume."""
    add_run_config_arguments(parser)
    add_runs_dir(parser)
    group = parser.add_argument_group("placement")
    group.add_argument(
        "--gpus",
        metavar="0,1,...",
        default=None,
        help="GPU indices for the run (default: every visible GPU; none on a machine without GPUs)",
    )
    group.add_argument(
        "--num-processes",
        type=int,
        default=None,
        metavar="N",
        help="training processes; more than 1 goes through accelerate launch (gloo on CPU) "
        "(default: one per training GPU, else 1)",
    )
    group.add_argument(
        "--accelerate-config",
        metavar="FILE",
        default=None,
        help="accelerate config file for DeepSpeed/FSDP/multi-node setups",
    )
    group.add_argument(
        "--vllm-port",
        type=int,
        default=None,
        metavar="PORT",
        help="port for the vLLM server a server-mode run starts on 127.0.0.1 (default: a free one)",
    )
    group.add_argument(
        "--vllm-timeout",
        type=float,
        default=None,
        metavar="S",
        help="seconds to wait for that server to become healthy (default: 600)",
    )
    parser.add_argument(
        "--resume",
        metavar="RUN",
        default=None,
        help="continue an ended or lost run from its newest complete checkpoint, in the same run folder "
        "(step numbers continue; events append to the same stream); only --max-steps may change, "
        "and a completed run needs a higher one",
    )


def create(config: RunConfig, args, available: list[int] | None = None, **kwargs) -> tuple[RunFolder, Placement]:
    """Validate config and placement, run the hardware pre-flight, create the folder. ``available``: the GPUs of
    the machine that will run it, when that is not this one (a Slurm node)."""
    with creating():
        gpus = parse_gpus(args.gpus)
        verdict = hardware.check(
            config, gpus=gpus, num_processes=args.num_processes, available=available, world_size=world_size
        )
        refuse(verdict.problems)
        print_hardware_notes(verdict)
        folder, placement = create_run(
            config,
            args.runs_dir,
            gpus=gpus,
            num_processes=args.num_processes,
            vllm_port=args.vllm_port,
            on_disk_note=print_disk_note,
            available=available,
            **kwargs,
        )
        hardware.record(folder, verdict)
        return folder, placement


def refuse(problems: list[ConfigError]) -> None:
    """Every problem on a line of its own (``error: …``), the last as the BadInput that exits 2."""
    if not problems:
        return
    for problem in problems[:-1]:
        print(f"error: {clean(problem)}", file=sys.stderr)
    raise BadInput(str(problems[-1]))


def print_hardware_notes(verdict: hardware.Verdict) -> None:
    """The fallbacks applied and the checks left to the trainer (stderr: `launch --json` keeps stdout)."""
    for line in verdict.notes():
        print(f"{'warning' if line.startswith('fallback') else 'note'}: hardware: {clean(line)}", file=sys.stderr)


def print_disk_note(room) -> None:
    """The disk check's word on a run that starts anyway (stderr: `launch --json` keeps stdout for its JSON)."""
    label = {"no_room": "warning", "tight": "warning"}.get(room.verdict, "note")
    print(f"{label}: disk: {room.message}", file=sys.stderr, flush=True)


def resume(args) -> tuple[RunFolder, Placement]:
    """(folder, placement) for --resume."""
    changed = [f.name for f in config_fields() if hasattr(args, f.name) and f.name != "max_steps"]
    if changed or getattr(args, "config", None):
        names = ", ".join(
            ["--config"] * bool(getattr(args, "config", None)) + ["--" + n.replace("_", "-") for n in changed]
        )
        raise BadInput(
            f"--resume continues the run with its own config.yaml; only --max-steps may change (got {names}). "
            "Start a new run to change anything else."
        )
    folder = resolve(argparse.Namespace(runs_dir=args.runs_dir, run=args.resume))
    try:
        plan = plan_resume(
            folder,
            max_steps=getattr(args, "max_steps", None),
            gpus=parse_gpus(args.gpus),
            num_processes=args.num_processes,
        )
    except ConfigError as exc:
        raise BadInput(str(exc)) from None
    print(plan.message, file=sys.stderr, flush=True)  # stderr: `launch --json` keeps stdout for its JSON
    assert plan.placement is not None, "plan_resume fills in the placement it applied"
    return folder, plan.placement


def options(args) -> LaunchOptions:
    return LaunchOptions(args.accelerate_config, args.vllm_port, args.vllm_timeout)
