"""``grpo-tui launch``: start a run detached from this terminal, print its id, return.

``--host`` starts it on another machine, by that machine's grpo-tui (``cli/remote.py``); ``--dry-run``
checks everything a launch would (config, placement, the hardware pre-flight, the files it names, on the
machine that would run it) and starts nothing.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from grpo_tui.services.lifecycle.supervisor import start_root
from grpo_tui.services.machine import hardware
from grpo_tui.services.records.wire import parse_launch_reply
from trainer_core.contract.config.checks import word_list
from trainer_core.contract.config.code_refs import is_file_path
from trainer_core.contract.config.model_source import model_problems
from trainer_core.contract.config.placement import Placement, parse_gpus
from trainer_core.contract.config.run_config import ConfigError, RunConfig, load_text
from trainer_core.contract.run.status import EXIT_BAD_INPUT, Status

from ..safe_text import clean, clean_json
from .common import BadInput, add_host, config_of, needs_trainer
from .starting import (
    add_start_arguments,
    create,
    missing_class,
    options,
    private_urls,
    resume_detached,
    split_notify,
    with_private_urls,
)


def register(sub) -> None:
    parser = sub.add_parser(
        "launch",
        help="start a GRPO training detached from this terminal and return",
        description="Start a run in its own session (immune to hang-ups, closed terminals and the death of this "
        "command), print its id and folder, and return. Watch it with 'grpo-tui watch RUN', stop it with 'grpo-tui stop RUN'.",
    )
    add_start_arguments(parser)
    add_host(parser)
    slurm = parser.add_argument_group("Slurm (docs/slurm.md)")
    slurm.add_argument(
        "--slurm",
        dest="submit_slurm",
        action="store_true",
        help="submit the run as a Slurm batch job (also when the config has a slurm: section)",
    )
    slurm.add_argument("--partition", default=None, metavar="P", help="Slurm partition")
    slurm.add_argument("--time", default=None, metavar="MINUTES|HH:MM:SS", help="the job's time limit")
    slurm.add_argument("--nodes", type=int, default=None, metavar="N", help="nodes; more than 1 trains across them")
    slurm.add_argument("--gpus-per-node", type=int, default=None, metavar="G", help="GPUs per node")
    slurm.add_argument(
        "--sbatch-arg",
        action="append",
        default=None,
        metavar="ARG",
        help="any other sbatch option, e.g. --sbatch-arg=--account=lab (repeatable)",
    )
    slurm.add_argument(
        "--slurm-grace",
        type=int,
        default=None,
        metavar="S",
        help="seconds of warning (TERM) before the time limit, for a step and a checkpoint (default: 300)",
    )
    parser.add_argument("--json", action="store_true", help="print the run id and folder as JSON")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="check the config, placement, hardware settings (docs/hardware.md) and the files it names on the "
        "machine that would run it; start nothing",
    )
    parser.set_defaults(handler=run)


def run(args) -> int:
    from .remote import is_remote

    if is_remote(args):
        return launch_remote(args)
    # this machine runs it (a Slurm job runs this interpreter on its node): it needs the trainer here
    needs_trainer("launch", "launch on a host that has it (--host NAME)")
    if args.dry_run:
        return dry_run(args)
    if args.resume:
        launched, placement = resume_detached(args)
        return say_launched(args, launched.run_id, Path(launched.path), launched.pid, placement)
    config = with_slurm(config_of(args), args)
    if config.slurm:
        return launch_slurm(config, args)
    folder, placement = create(config, args)
    proc = start_root(folder, placement, options(args))
    return say_launched(args, folder.run_id, folder.path, proc.pid, placement)


def say_launched(args, run_id: str, path: Path, pid: int | None, placement: Placement) -> int:
    if args.json:
        print(json.dumps({"run_id": run_id, "path": str(path.resolve()), "pid": pid}))
    else:
        print(
            f"launched run {run_id}\n  folder: {path}\n  watch:  grpo-tui watch {run_id}"
            f"\n  stop:   grpo-tui stop {run_id}"
        )
        for note in placement.notes:
            print(f"  note:   {note}")
    return 0


def with_slurm(config: RunConfig, args) -> RunConfig:
    """The config with the Slurm flags given merged into its ``slurm`` settings (flags win)."""
    given = {
        "partition": args.partition,
        "time": _time(args.time),
        "nodes": args.nodes,
        "gpus_per_node": args.gpus_per_node,
        "sbatch_args": args.sbatch_arg,
        "grace": args.slurm_grace,
    }
    settings = {**config.slurm, **{k: v for k, v in given.items() if v is not None}}
    if args.submit_slurm and not settings:
        settings = {"nodes": 1}
    config.slurm = settings
    problems = [p for p in config.problems() if p.field == "slurm"]
    if problems:
        raise BadInput(str(problems[0]))
    return config


def _time(value: str | None):
    return int(value) if value is not None and value.isdigit() else value


def launch_slurm(config: RunConfig, args) -> int:
    from grpo_tui.services.slurm.batch import submit

    gpus = list(range(config.slurm.get("gpus_per_node") or 0))
    folder, placement = create(config, args, available=gpus, status=Status.QUEUED)
    try:
        job = submit(folder, config, placement)
    except ConfigError as exc:
        raise BadInput(str(exc)) from None
    if args.json:
        print(json.dumps({"run_id": folder.run_id, "path": str(folder.path.resolve()), "slurm_job_id": job}))
    else:
        print(
            f"submitted run {folder.run_id} as Slurm job {job}\n  folder: {folder.path}\n  script: "
            f"{folder.path / 'slurm' / 'job.sbatch'}\n  watch:  grpo-tui watch {folder.run_id}"
            f"\n  stop:   grpo-tui stop {folder.run_id}"
        )
    return 0


def missing_files(config: RunConfig) -> list[ConfigError]:
    """The files a config names that are not on this machine, and a model it cannot load (config/model_source.py)."""
    found = []
    module = config.rl_env_module or ""
    if is_file_path(module):  # a dotted module is found where the run runs
        if not os.path.isfile(os.path.expanduser(module)):
            found.append(
                ConfigError(
                    "rl_env_module",
                    f"rl_env_module {module!r} is not a file on this machine "
                    f"({os.uname().nodename}); give a path that exists where the run runs",
                )
            )
    found += model_problems(config.model)  # a model folder here, or a Hub id (cached, when offline)
    dataset = config.dataset or ""
    local = dataset.startswith(("/", "./", "../", "~")) or dataset.endswith((".json", ".jsonl", ".csv", ".parquet"))
    if local and not os.path.exists(os.path.expanduser(dataset)):
        found.append(
            ConfigError(
                "dataset",
                f"dataset {dataset!r} is not a file or folder on this machine "
                f"({os.uname().nodename}); give a path that exists where the run runs, or a Hub id",
            )
        )
    for name in config.reward_funcs if isinstance(config.reward_funcs, dict) else ():
        path = name.rpartition(":")[0]
        if path.endswith(".py") and not os.path.isfile(os.path.expanduser(path)):
            found.append(
                ConfigError(
                    "reward_funcs",
                    f"reward function file {path!r} is not a file on this machine "
                    f"({os.uname().nodename}); give a path that exists where the run runs",
                )
            )
    return found


def dry_run(args) -> int:
    """Everything but the start: prints what would run, or the problems (exit 2)."""
    if args.resume:
        raise BadInput("--dry-run checks a new run; drop --resume")
    config = with_private_urls(config_of(args))
    notes: list[str] = []
    try:
        verdict = hardware.check(config, gpus=parse_gpus(args.gpus), num_processes=args.num_processes)
    except ConfigError as exc:  # --gpus that is not a list of indices
        problems, placement = [exc], None
    else:
        placement = verdict.placement
        problems = [] if placement is None else list(config.problems(world_size=placement.num_processes))
        problems += verdict.problems
        if placement is not None:
            problems += missing_files(config)
            missing = missing_class(config)
            problems += [ConfigError("rl_env_class", missing)] if missing else []
            notes = [*placement.notes, *(f"hardware: {n}" for n in verdict.notes())]
    if args.json:
        print(
            json.dumps(
                {
                    "ok": not problems,
                    "problems": [{"field": p.field, "message": str(p)} for p in problems],
                    "placement": placement.to_dict() if placement else None,
                    "notes": notes,
                }
            )
        )
    else:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if not problems:
            print("ok: the run can start here" + "".join(f"\n  note: {n}" for n in notes))
    return EXIT_BAD_INPUT if problems else 0


def notify_on_stdin(words: list[str], data: bytes | None) -> tuple[list[str], bytes | None]:
    """The host's ``launch`` words without notify URLs, and its stdin with them: ``--notify URL`` (and
    ``$GRPO_TUI_NOTIFY``'s) move into the config it reads from stdin (``--config -``), so that no command line
    shows them, here (ssh's) or there."""
    rest, urls = split_notify(words)
    urls = list(dict.fromkeys([*urls, *private_urls()]))
    if not urls:
        return words, data
    import yaml

    try:
        config = load_text(data.decode("utf-8"), "--config") if data is not None else {}
    except (ConfigError, UnicodeDecodeError) as exc:
        raise BadInput(str(exc)) from None
    config["notify"] = [*word_list(config.get("notify")), *urls]
    if data is None:
        rest += ["--config", "-"]
    return rest, yaml.safe_dump(config, sort_keys=False).encode()


def launch_remote(args) -> int:
    """Launch on ``--host`` through its ``launch --json``; say how to reach the run from here."""
    from ..executors.hosts import HostError
    from .remote import remote_words, ssh_executor

    ex = ssh_executor(args)
    try:
        ex.info()
        words, data = notify_on_stdin(*remote_words(args, ex))
        if "--json" not in words:
            words.append("--json")
        done = ex.conn.run(words, input=data, timeout=600)
    except HostError as exc:
        raise BadInput(str(exc)) from None
    sys.stderr.write(clean(done.stderr.decode(errors="replace")))
    if done.returncode != 0:
        return done.returncode
    if args.json or args.dry_run:
        sys.stdout.write(clean_json(done.stdout.decode(errors="replace")))
        return 0
    try:
        started = parse_launch_reply(json.loads(done.stdout))
    except ValueError as exc:  # not JSON, or a reply that breaks the format (WireError)
        raise BadInput(f"host {ex.name}: launch --json: {exc}") from None
    host, run_id = ex.name, started.run_id
    print(
        clean(
            f"launched run {run_id} on {host}\n  folder: {host}:{started.path}"
            f"\n  watch:  grpo-tui watch {run_id} --host {host}\n  stop:   grpo-tui stop {run_id} --host {host}"
        )
    )
    return 0
