"""The ``grpo-tui`` command line.

Each subcommand imports only what it needs: ``train`` and ``demo`` never import Textual here (the trainer
runs in a child process), and nothing in this process imports torch, transformers or TRL.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from trainer_core.cli_args import add_run_config_arguments, config_from_args
from trainer_core.config import ConfigError, RunConfig
from trainer_core.run_folder import RUNS_DIR_ENV, RunFolder

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "grpo-tui"


def _add_runs_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runs-dir", metavar="DIR", default=None,
        help=f"folder holding run folders (default: ${RUNS_DIR_ENV}, else ./runs)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grpo-tui", description="Configure, launch and watch GRPO fine-tuning runs.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    train = sub.add_parser(
        "train", help="run a GRPO training in the foreground, writing a run folder",
        description="Run GRPO in the foreground. Ctrl-C (or SIGTERM) stops after the current step with a "
        "checkpoint; a second Ctrl-C stops at once. Exit code: 0 completed, 3 stopped, 1 failed, 2 bad config.",
    )
    add_run_config_arguments(train)
    _add_runs_dir(train)
    train.add_argument("--num-processes", type=int, default=1, metavar="N",
                       help="training processes (more than 1 goes through accelerate launch; gloo on CPU) (default: 1)")
    train.add_argument("--accelerate-config", metavar="FILE", default=None,
                       help="accelerate config file for DeepSpeed/FSDP/multi-node setups")

    tiny = sub.add_parser("tiny-model", help="write a tiny random causal LM and tokenizer (no network needed)")
    tiny.add_argument("output_dir", type=Path)

    demo = sub.add_parser("demo", help="train the tiny model on an example environment and print live metrics")
    _add_runs_dir(demo)
    demo.add_argument("--max-steps", type=int, default=30, help="steps to train (default: 30)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return {"train": cmd_train, "tiny-model": cmd_tiny_model, "demo": cmd_demo}[args.command](args)


def _config_error(exc: ConfigError) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return 2


def start_foreground(config: RunConfig, runs_dir, num_processes: int = 1, accelerate_config: str | None = None) -> int:
    from .services.foreground import run_foreground

    try:
        config.validate(world_size=num_processes)
        folder = RunFolder.create(runs_dir)
    except ConfigError as exc:
        return _config_error(exc)
    except OSError as exc:
        print(f"error: {exc.strerror or exc}", file=sys.stderr)
        return 2
    config.save(folder.config_file)
    os.chmod(folder.config_file, 0o600)
    return run_foreground(folder, num_processes, accelerate_config=accelerate_config)


def cmd_train(args) -> int:
    try:
        config = config_from_args(args)
    except ConfigError as exc:
        return _config_error(exc)
    if args.num_processes < 1:
        print(f"error: --num-processes must be >= 1, got {args.num_processes}", file=sys.stderr)
        return 2
    return start_foreground(config, args.runs_dir, args.num_processes, args.accelerate_config)


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


def cmd_demo(args) -> int:
    config = demo_config(tiny_model_dir(), args.max_steps)
    return start_foreground(config, args.runs_dir)
