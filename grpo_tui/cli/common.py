"""What every grpo-tui command shares: the bad-input error, common flags, run lookup, starting the app."""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager

from grpo_tui.config_flags import config_from_args
from grpo_tui.services.records.wire import TRAIN_EXTRA, missing_trainer
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.folder import RUNS_DIR_ENV, RunFolder
from trainer_core.contract.run.status import EXIT_BAD_INPUT as EXIT_BAD_INPUT


class BadInput(Exception):
    """A mistake in what the user asked for: ``main`` prints it as ``error: …`` and exits with EXIT_BAD_INPUT."""


def needs_trainer(command: str, elsewhere: str = "") -> None:
    """Before a command that trains, loads a model or builds one here: in a light install, BadInput naming the
    extra to install (one line, exit 2), instead of a child's ModuleNotFoundError traceback. ``elsewhere``: how
    to do it without the trainer here (``--host``), said after the install line."""
    missing = missing_trainer()
    if missing:
        raise BadInput(
            f"grpo-tui {command} needs the trainer, which this install lacks (no {', '.join(missing)}): "
            f"{TRAIN_EXTRA}{f', or {elsewhere}' if elsewhere else ''}"
        )


def runs_dir_help() -> str:
    return f"folder holding run folders (default: ${RUNS_DIR_ENV}, else ./runs)"


def add_runs_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs-dir", metavar="DIR", default=None, help=runs_dir_help())


def add_theme(parser: argparse.ArgumentParser, dest: str = "theme") -> None:
    parser.add_argument(
        "--theme",
        dest=dest,
        default=None,
        metavar="NAME",
        help="app theme: grpo-dark (default), grpo-light, grpo-high-contrast, or any Textual theme",
    )


def add_host(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host",
        metavar="NAME",
        default=None,
        help="run it on that host: a name from the hosts file or an SSH destination (docs/hosts.md)",
    )


def add_run_ref(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="run id, a unique prefix of one, 'latest', or a run folder path")
    add_runs_dir(parser)


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
    from grpo_tui.services.catalog.folders import UnknownRunError, resolve_run

    try:
        return resolve_run(args.runs_dir, args.run)
    except UnknownRunError as exc:
        raise BadInput(str(exc)) from None


def run_config(folder: RunFolder) -> RunConfig:
    """The run's config.yaml as a RunConfig; BadInput naming the file when it is missing or broken (not UTF-8,
    not YAML, not a mapping, a bad field), before a command spends anything on the run."""
    try:
        return RunConfig.load(folder.config_file)
    except ConfigError as exc:
        raise BadInput(f"run {folder.run_id}: {exc}") from None
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, a YAML nested past the parser's depth
        why = "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "it cannot be parsed"
        raise BadInput(f"run {folder.run_id}: {folder.config_file}: {why}") from None


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def run_app(runs_dir, theme, **kwargs) -> int:
    from ..app import make_app
    from ..executors.hosts import HostError

    try:
        app = make_app(runs_dir, theme=theme, **kwargs)
    except (HostError, ValueError) as exc:  # a bad hosts file, or a bad alert setting
        raise BadInput(str(exc)) from None
    app.run()
    return app.return_code or 0  # 1 after a crash (its notice names the file with the traceback)


def config_of(args) -> RunConfig:
    try:
        return config_from_args(args)
    except ConfigError as exc:
        raise BadInput(str(exc)) from None
