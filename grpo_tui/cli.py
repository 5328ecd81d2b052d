"""The ``grpo-tui`` command line.

Each subcommand imports only what it needs. Nothing in this process imports torch, transformers, TRL,
datasets or peft: training happens in the run's own processes, and everything here reads run folders and
sends signals.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from trainer_core.cli_args import add_run_config_arguments
from trainer_core.config import ConfigError, RunConfig
from trainer_core.placement import parse_gpus
from trainer_core.run_folder import RUNS_DIR_ENV

from .cli_common import COMMANDS, EXIT_BAD_INPUT, BadInput, command, config_of, creating, interactive, resolve, run_app

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "grpo-tui"


def _add_runs_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs-dir", metavar="DIR", default=None,
                        help=f"folder holding run folders (default: ${RUNS_DIR_ENV}, else ./runs)")


def _add_placement(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("placement")
    group.add_argument("--gpus", metavar="0,1,...", default=None,
                       help="GPU indices for the run (default: every visible GPU; none on a machine without GPUs)")
    group.add_argument("--num-processes", type=int, default=None, metavar="N",
                       help="training processes; more than 1 goes through accelerate launch (gloo on CPU) "
                            "(default: one per training GPU, else 1)")
    group.add_argument("--accelerate-config", metavar="FILE", default=None,
                       help="accelerate config file for DeepSpeed/FSDP/multi-node setups")
    group.add_argument("--vllm-port", type=int, default=None, metavar="PORT",
                       help="port for the vLLM server a server-mode run starts on 127.0.0.1 (default: a free one)")
    group.add_argument("--vllm-timeout", type=float, default=None, metavar="S",
                       help="seconds to wait for that server to become healthy (default: 600)")


def _add_theme(parser: argparse.ArgumentParser, dest: str = "theme") -> None:
    parser.add_argument("--theme", dest=dest, default=None, metavar="NAME",
                        help="app theme: grpo-dark (default), grpo-light, grpo-high-contrast, or any Textual theme")


def _add_run_ref(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="run id, a unique prefix of one, 'latest', or a run folder path")
    _add_runs_dir(parser)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grpo-tui", description="Configure, launch, watch and stop GRPO fine-tuning runs. "
        "Without a command, opens the app on the list of runs.")
    parser.add_argument("--runs-dir", dest="root_runs_dir", metavar="DIR", default=None,
                        help=f"folder holding run folders (default: ${RUNS_DIR_ENV}, else ./runs)")
    _add_theme(parser, dest="root_theme")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    train = sub.add_parser(
        "train", help="run a GRPO training and print its metrics until it ends",
        description="Run GRPO and print one line per step until it ends. Ctrl-C (or SIGTERM) stops after the current "
        "step with a checkpoint; a second Ctrl-C stops at once. Exit code: 0 completed, 3 stopped, 1 failed, 2 bad input.",
    )
    launch = sub.add_parser(
        "launch", help="start a GRPO training detached from this terminal and return",
        description="Start a run in its own session (immune to hang-ups, closed terminals and the death of this "
        "command), print its id and folder, and return. Watch it with 'grpo-tui watch RUN', stop it with 'grpo-tui stop RUN'.",
    )
    for p in (train, launch):
        add_run_config_arguments(p)
        _add_runs_dir(p)
        _add_placement(p)
        p.add_argument("--resume", metavar="RUN", default=None,
                       help="continue a stopped or failed run from its last checkpoint, in the same run folder (step "
                            "numbers continue; events append to the same stream); only --max-steps may change")
    launch.add_argument("--json", action="store_true", help="print the run id and folder as JSON")

    inspect = sub.add_parser(
        "inspect", help="generate and score completions before training: the reward-inspection gate",
        description="Load the model and environment as training would, generate rl_num_generations completions for "
        "enough prompts, score them, and report the distribution, per-group spread and problems (exceptions, "
        "out-of-range or identical scores, zero-spread groups, a model that never succeeds or always does). "
        "Exit code: 0 no critical problem, 4 critical problems, 1 the inspection failed, 2 bad input.")
    add_run_config_arguments(inspect)
    _add_runs_dir(inspect)
    inspect.add_argument("--samples", type=int, default=64, metavar="N", help="completions to score (default: 64)")

    runs = sub.add_parser("runs", help="list runs: status, step, last reward, warnings")
    _add_runs_dir(runs)
    runs.add_argument("--json", action="store_true", help="print the list as JSON")

    stop = sub.add_parser("stop", help="stop a run: graceful with a checkpoint, then TERM/KILL of every process it started")
    _add_run_ref(stop)
    stop.add_argument("--force", action="store_true", help="skip the graceful stage")
    stop.add_argument("--timeout", type=float, default=300.0, metavar="S",
                      help="seconds to wait for the graceful stop (a step plus a checkpoint save) (default: 300)")

    logs = sub.add_parser("logs", help="print a run's trainer.log")
    _add_run_ref(logs)
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing until the run ends")

    watch = sub.add_parser("watch", help="live view of a run's metrics, warnings and state")
    _add_run_ref(watch)
    watch.add_argument("--once", action="store_true", help="print the current view once (plain text) and exit")
    _add_theme(watch)

    merge = sub.add_parser("merge", help="merge a run's LoRA adapters into the base model (or export a full fine-tune)")
    _add_run_ref(merge)
    merge.add_argument("--output", required=True, type=Path, metavar="DIR", help="folder for the merged model and tokenizer")
    merge.add_argument("--checkpoint", type=int, default=None, metavar="N",
                       help="merge checkpoint-N (default: the completed run's final model, else the newest checkpoint)")

    tiny = sub.add_parser("tiny-model", help="write a tiny random causal LM and tokenizer (no network needed)")
    tiny.add_argument("output_dir", type=Path)

    demo = sub.add_parser("demo", help="train the tiny model on an example environment and print live metrics")
    _add_runs_dir(demo)
    demo.add_argument("--max-steps", type=int, default=600, help="steps to train (default: 600, about half a minute on a laptop CPU)")
    _add_theme(demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    from . import cli_runs  # noqa: F401  (registers its commands)

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        return run_app(args.root_runs_dir, args.root_theme)
    try:
        return COMMANDS[args.command](args)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # output piped into `head` and the like: stop quietly, as other command-line tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _create(config: RunConfig, args):
    """Validate config and placement, create the folder; returns (folder, placement)."""
    from .services.supervisor import create_run

    with creating():
        return create_run(config, args.runs_dir, gpus=parse_gpus(args.gpus), num_processes=args.num_processes,
                          vllm_port=args.vllm_port)


def _resume(args):
    """(folder, placement) for --resume."""
    from trainer_core.config import config_fields

    from .services.supervisor import prepare_resume

    changed = [f.name for f in config_fields() if hasattr(args, f.name) and f.name != "max_steps"]
    if changed or getattr(args, "config", None):
        names = ", ".join(["--config"] * bool(getattr(args, "config", None)) + ["--" + n.replace("_", "-") for n in changed])
        raise BadInput(f"--resume continues the run with its own config.yaml; only --max-steps may change (got {names}). "
                     "Start a new run to change anything else.")
    folder = resolve(argparse.Namespace(runs_dir=args.runs_dir, run=args.resume))
    try:
        placement = prepare_resume(folder, max_steps=getattr(args, "max_steps", None), gpus=parse_gpus(args.gpus),
                                   num_processes=args.num_processes)
    except ConfigError as exc:
        raise BadInput(str(exc)) from None
    return folder, placement


@command("train")
def cmd_train(args) -> int:
    if args.resume:
        from .services.foreground import run_foreground

        return run_foreground(*_resume(args), _options(args))
    return _train_foreground(config_of(args), args)


def _train_foreground(config: RunConfig, args) -> int:
    from .services.foreground import run_foreground

    return run_foreground(*_create(config, args), _options(args))


def _options(args):
    from .services.supervisor import LaunchOptions

    return LaunchOptions(args.accelerate_config, args.vllm_port, args.vllm_timeout)


@command("launch")
def cmd_launch(args) -> int:
    from .services.supervisor import start_root

    folder, placement = _resume(args) if args.resume else _create(config_of(args), args)
    proc = start_root(folder, placement, _options(args))
    if args.json:
        print(json.dumps({"run_id": folder.run_id, "path": str(folder.path), "pid": proc.pid}))
    else:
        print(f"launched run {folder.run_id}\n  folder: {folder.path}\n  watch:  grpo-tui watch {folder.run_id}"
              f"\n  stop:   grpo-tui stop {folder.run_id}")
        for note in placement.notes:
            print(f"  note:   {note}")
    return 0


@command("tiny-model")
def cmd_tiny_model(args) -> int:
    import subprocess

    code = "import sys; from trainer_core.tiny_model import build_tiny_model; print(build_tiny_model(sys.argv[1]))"
    return subprocess.call([sys.executable, "-c", code, str(args.output_dir)])


def tiny_model_dir() -> Path:
    """The demo's tiny model, built once into the cache (in a child process: this one stays torch-free)."""
    import subprocess

    path = _cache_dir() / "tiny-model"
    if not (path / ".grpo-tui-tiny-model").exists():
        print(f"building the tiny demo model in {path} ...", flush=True)
        code = "import sys; from trainer_core.tiny_model import build_tiny_model; build_tiny_model(sys.argv[1])"
        subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    return path


def demo_config(model_dir: Path, max_steps: int) -> RunConfig:
    config = RunConfig.load(EXAMPLES_DIR / "configs" / "cpu_demo.yaml")
    config.model = str(model_dir)
    config.rl_env_module = str(EXAMPLES_DIR / "pattern_env.py")
    config.max_steps = max_steps
    return config


@command("demo")
def cmd_demo(args) -> int:
    """In a terminal: launch the demo run detached and open its monitor. Piped: print its metrics."""
    config = demo_config(tiny_model_dir(), args.max_steps)
    args.gpus = args.num_processes = args.accelerate_config = args.vllm_port = args.vllm_timeout = None
    if not interactive():
        return _train_foreground(config, args)
    from .services.supervisor import start_root

    folder, placement = _create(config, args)
    start_root(folder, placement, _options(args))
    code = run_app(args.runs_dir, args.theme, watch=folder.path, start="watch")
    from .services.registry import is_live, live_status

    status = live_status(folder)
    if is_live(status):
        print(f"the demo run {folder.run_id} goes on in the background; stop it with: grpo-tui stop {folder.run_id}")
    else:
        print(f"the demo run {folder.run_id} is {status}; see it again with: grpo-tui watch {folder.run_id}")
    return code
