"""What every grpo-tui subcommand shares: the command registry, the bad-input error, run lookup, starting the app.

Kept apart from the parser (cli.py) and the run-management commands (cli_runs.py) so each stays small.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

from trainer_core.cli_args import config_from_args
from trainer_core.config import ConfigError, RunConfig
from trainer_core.run_folder import RunFolder

EXIT_BAD_INPUT = 2

COMMANDS = {}


def command(name):
    def register(func):
        COMMANDS[name] = func
        return func
    return register


class BadInput(Exception):
    """A mistake in what the user asked for: ``main`` prints it as ``error: …`` and exits with EXIT_BAD_INPUT."""


@contextmanager
def creating():
    """Around creating a run or inspection folder: a bad config or a runs dir that cannot be written is BadInput."""
    try:
        yield
    except ConfigError as exc:
        raise BadInput(str(exc)) from None
    except OSError as exc:
        raise BadInput(exc.strerror or str(exc)) from None


def resolve(args) -> RunFolder:
    from .services.registry import UnknownRunError, resolve_run

    try:
        return resolve_run(args.runs_dir, args.run)
    except UnknownRunError as exc:
        raise BadInput(str(exc)) from None


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def run_app(runs_dir, theme, **kwargs) -> int:
    from .app import make_app

    make_app(runs_dir, theme=theme, **kwargs).run()
    return 0


def config_of(args) -> RunConfig:
    try:
        return config_from_args(args)
    except ConfigError as exc:
        raise BadInput(str(exc)) from None
