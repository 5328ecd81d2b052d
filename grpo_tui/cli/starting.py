"""Creating or resuming a run from command-line flags: shared by ``train``, ``launch`` and ``demo``.

A resume is this machine's executor's (``executors/local.py``): it finds the run, checks that it has ended, plans
and applies the resume and (for ``launch``) starts it; this module checks the flags and says the plan.

Notify URLs are secrets and a command line is not (``ps`` shows it to every user of the machine): a run's
processes get them from the run folder's private notify.json, never from argv. ``train`` lives as long as its
run, so when it was given ``--notify URL`` it executes itself again at once without those words
(``hide_notify_urls``), handing the URLs to the new image through an inherited pipe that only it reads.
``$GRPO_TUI_NOTIFY`` names URLs without any command line; both are added to the config's (``private_urls``).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import sys
import tokenize
from pathlib import Path

from grpo_tui.config_flags import add_run_config_arguments
from grpo_tui.services.lifecycle.supervisor import LaunchOptions, create_run, world_size
from grpo_tui.services.machine import hardware
from trainer_core.contract.config.code_refs import missing_class as missing_env_class
from trainer_core.contract.config.model_source import model_problem
from trainer_core.contract.config.notify_urls import NOTIFY_ENV, NOTIFY_FD_ENV, env_urls
from trainer_core.contract.config.placement import Placement, parse_gpus
from trainer_core.contract.config.resume_changes import parse_sets, safe_names
from trainer_core.contract.config.resume_plan import ResumeChange, ResumePlan
from trainer_core.contract.config.run_config import ConfigError, RunConfig, config_fields
from trainer_core.contract.config.usual_values import unusual_values
from trainer_core.contract.run.folder import RunFolder

from ..executors.base import ExecutorError, Launched
from ..safe_text import clean
from .common import BadInput, add_runs_dir, creating


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
        "(step numbers continue from the checkpoint's; events append to the same stream); only --max-steps and "
        "--set may change settings, and a completed run needs a higher --max-steps unless --checkpoint goes back "
        "before its end",
    )
    parser.add_argument(
        "--checkpoint",
        metavar="WHICH",
        default=None,
        help="with --resume: continue from this checkpoint instead of the newest: best (by the held-out metric), "
        "last or a step number (grpo-tui checkpoints RUN lists them)",
    )
    add_set_argument(parser)


def add_set_argument(parser: argparse.ArgumentParser, when: str = "with --resume: ") -> None:
    parser.add_argument(
        "--set",
        metavar="KEY=VALUE",
        action="append",
        default=None,
        dest="sets",
        help=f"{when}change a setting for the rest of the run (repeatable); config.yaml keeps the new "
        "value and the run records the change (docs/recipes.md). Only these may change: "
        f"{safe_names()} (lr may be written learning_rate, rl_kl_coef beta, rl_clip_range epsilon, rl_temperature "
        "temperature; health.KEY=VALUE changes one threshold); anything else is refused",
    )


PIPE_LIMIT = 60_000  # bytes of URLs a pipe takes without a reader (Linux gives 64 KiB)


def split_notify(words: list[str]) -> tuple[list[str], list[str]]:
    """``words`` without their ``--notify URL`` / ``--notify=URL``, and those URLs. A word ``--notify`` is always
    the flag (argparse reads a word starting with ``--`` as an option, never as another flag's value), and the
    commands that take it have no positional argument a ``--`` could precede."""
    rest, urls, i = [], [], 0
    while i < len(words):
        word = words[i]
        if word == "--notify" and i + 1 < len(words):
            urls.append(words[i + 1])
            i += 2
            continue
        if word.startswith("--notify="):
            urls.append(word.split("=", 1)[1])
        else:
            rest.append(word)
        i += 1
    return rest, urls


def hide_notify_urls(args) -> None:
    """If ``--notify URL`` is on this process's command line, execute this command again without it, at once
    (before anything has been read from stdin or started), the URLs passed on through a pipe the new image
    inherits; ``private_urls`` reads them there. Does nothing for a command run in-process (``main(argv)``)."""
    argv = sys.argv[1:]
    if getattr(args, "argv", None) != argv or getattr(args, "resume", None):
        return  # in-process; or a resume, which refuses --notify (it keeps the run's own config)
    rest, urls = split_notify(argv)
    if not urls:
        return
    payload = json.dumps(urls).encode()
    prefix = sys.orig_argv[: len(sys.orig_argv) - len(argv)]
    if len(payload) > PIPE_LIMIT or sys.orig_argv[len(prefix) :] != argv or not prefix:
        raise BadInput(
            f"--notify: the URLs could not be taken off this command line; give them in ${NOTIFY_ENV} or the "
            "settings file instead (docs/alerts.md)"
        )
    read, write = os.pipe()
    os.write(write, payload)
    os.close(write)
    os.set_inheritable(read, True)
    env = {**os.environ, NOTIFY_FD_ENV: str(read)}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [*prefix, *rest], env)


def private_urls() -> list[str]:
    """The notify URLs given without a command line: ``$GRPO_TUI_NOTIFY``'s and those ``hide_notify_urls``
    passed on. Both are taken out of this process's environment, so the run's processes never inherit them
    (the run's root reads the run folder's notify.json)."""
    urls = env_urls()
    os.environ.pop(NOTIFY_ENV, None)
    fd = os.environ.pop(NOTIFY_FD_ENV, None)
    if fd is not None and fd.isdigit():
        try:
            with os.fdopen(int(fd), "rb") as pipe:
                passed = json.loads(pipe.read() or b"[]")
        except (OSError, ValueError):
            passed = []
        urls += [u for u in passed if isinstance(u, str)] if isinstance(passed, list) else []
    return list(dict.fromkeys(urls))


def with_private_urls(config: RunConfig) -> RunConfig:
    """``config`` with the URLs of ``private_urls`` added to its own."""
    urls = private_urls()
    if urls:
        own = config.notify if isinstance(config.notify, list) else []
        config.notify = list(dict.fromkeys([*own, *urls]))
    return config


def missing_class(config: RunConfig) -> str | None:
    """Why ``rl_env_class`` is certainly not in the ``rl_env_module`` file, read as text (never imported: this
    process stays free of the user's code and what it imports), or None. Certain means: the file defines,
    imports or assigns no such name at its top level, has no ``import *``, and never spells the name at all,
    so nothing could bind it. Anything else is left to the trainer, which imports the module and says so."""
    module, name = config.rl_env_module, config.rl_env_class
    if not (module and name and module.endswith(".py")):
        return None
    path = Path(module).expanduser()
    try:
        source = path.read_bytes()
        tree = ast.parse(source)
        words = {t.string for t in tokenize.tokenize(io.BytesIO(source).readline) if t.type == tokenize.NAME}
    except (OSError, SyntaxError, ValueError, tokenize.TokenError):
        return None  # not here (a Slurm node's path), or not Python: the trainer names it
    if name in words or any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in tree.body):
        return None
    classes = sorted(n.name for n in tree.body if isinstance(n, ast.ClassDef) and not n.name.startswith("_"))
    return missing_env_class(name, module, classes)  # the trainer's own words for it


def create(config: RunConfig, args, available: list[int] | None = None, **kwargs) -> tuple[RunFolder, Placement]:
    """Validate config and placement, run the hardware pre-flight, create the folder. ``available``: the GPUs of
    the machine that will run it, when that is not this one (a Slurm node). The notify URLs given without a
    command line (``private_urls``) are added to the config's."""
    if getattr(args, "checkpoint", None) is not None:
        raise BadInput("--checkpoint chooses where a resume starts: use it with --resume RUN.")
    if getattr(args, "sets", None):
        raise BadInput("--set changes a resumed run's settings: use it with --resume RUN (a new run takes the flags).")
    config = with_private_urls(config)
    problem = missing_class(config) or model_problem(config.model)
    if problem:
        raise BadInput(problem)  # before a run folder is made, or a hardware note is printed
    with creating():
        gpus = parse_gpus(args.gpus)
        verdict = hardware.check(
            config, gpus=gpus, num_processes=args.num_processes, available=available, world_size=world_size
        )
        refuse(verdict.problems)
        print_hardware_notes(verdict)
        for unusual in unusual_values(config):  # valid, so it runs; said before it does, as the form asks first
            print(f"warning: {clean(str(unusual))}", file=sys.stderr)
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


def resume_change(args, by: str = "user", reason: str | None = None) -> ResumeChange:
    """``--set``'s words as the change a resume makes (BadInput naming a setting a resume may not change)."""
    try:
        return ResumeChange(parse_sets(getattr(args, "sets", None)), by=by, reason=reason)
    except ConfigError as exc:
        raise BadInput(str(exc)) from None


def _resumed(args):
    """The executor of this machine and the run ``--resume`` names (BadInput for a flag it cannot change, or a
    reference that names no run), and the placement flags parsed."""
    from .remote import executors, find

    changed = [f.name for f in config_fields() if hasattr(args, f.name) and f.name != "max_steps"]
    if changed or getattr(args, "config", None):
        names = ", ".join(
            ["--config"] * bool(getattr(args, "config", None)) + ["--" + n.replace("_", "-") for n in changed]
        )
        raise BadInput(
            f"--resume continues the run with its own config.yaml; only --max-steps may change (got {names}) as a "
            "flag: change a setting a resume may change with --set KEY=VALUE (e.g. --set lr=5e-6), or start a new "
            "run to change anything else."
        )
    run = find(args, args.resume)
    if args.checkpoint is not None and args.checkpoint not in ("best", "last") and not args.checkpoint.isdigit():
        raise BadInput(f"--checkpoint takes best, last or a step number, got {args.checkpoint!r}.")
    try:
        gpus = parse_gpus(args.gpus)
    except ConfigError as exc:
        raise BadInput(str(exc)) from None
    return executors(args).local, run, gpus


def say_plan(plan: ResumePlan) -> None:
    print(plan.message, file=sys.stderr, flush=True)  # stderr: `launch --json` keeps stdout for its JSON


def resume(args) -> tuple[RunFolder, Placement]:
    """``train --resume``: the run made ready to continue here, in the foreground: (folder, placement)."""
    executor, run, gpus = _resumed(args)
    change = resume_change(args)
    try:
        plan = executor.prepare_resume(
            run,
            getattr(args, "max_steps", None),
            gpus=gpus,
            num_processes=args.num_processes,
            checkpoint=args.checkpoint,
            change=change,
        )
    except ExecutorError as exc:
        raise BadInput(str(exc)) from None
    say_plan(plan)
    assert plan.placement is not None, "plan_resume fills in the placement it applied"
    return RunFolder(Path(run.path)), plan.placement


def resume_detached(args, change: ResumeChange | None = None) -> tuple[Launched, Placement]:
    """``launch --resume`` (and ``rollback``, with its ``change``): the run resumed and started detached by this
    machine's executor; what was started, and where (the plan is said on stderr before it starts)."""
    executor, run, gpus = _resumed(args)
    change = change or resume_change(args)
    plans: list[ResumePlan] = []

    def told(plan: ResumePlan) -> None:
        plans.append(plan)
        say_plan(plan)

    try:
        launched = executor.resume(
            run,
            getattr(args, "max_steps", None),
            told,
            gpus=gpus,
            num_processes=args.num_processes,
            options=options(args),
            checkpoint=args.checkpoint,
            change=change,
        )
    except ExecutorError as exc:
        raise BadInput(str(exc)) from None
    placement = plans[0].placement
    assert placement is not None, "plan_resume fills in the placement it applied"
    return launched, placement


def options(args) -> LaunchOptions:
    return LaunchOptions(args.accelerate_config, args.vllm_port, args.vllm_timeout)
