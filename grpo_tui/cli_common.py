"""What every grpo-tui subcommand shares: the command registry, error exits, run lookup, starting the app.

Kept apart from the parser (cli.py) and the run-management commands (cli_runs.py) so each stays small.
"""

from __future__ import annotations

import sys

from trainer_core.cli_args import config_from_args
from trainer_core.config import ConfigError, RunConfig

EXIT_BAD_INPUT = 2

COMMANDS = {}


def command(name):
    def register(func):
        COMMANDS[name] = func
        return func
    return register


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def resolve(args):
    from .services.registry import UnknownRunError, resolve_run

    try:
        return resolve_run(args.runs_dir, args.run)
    except UnknownRunError as exc:
        return fail(str(exc))


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def run_app(runs_dir, theme, **kwargs) -> int:
    from .app import make_app

    make_app(runs_dir, theme=theme, **kwargs).run()
    return 0


def config_or_exit(args) -> RunConfig | int:
    try:
        return config_from_args(args)
    except ConfigError as exc:
        return fail(str(exc))
