"""``grpo-tui runs``: every run with its status, step, last reward and warnings, as a table or JSON."""

from __future__ import annotations

import os
import sys

import orjson
from rich.table import Table
from rich.text import Text

from trainer_core.contract.run_folder import RUNS_DIR_ENV

from ..formatting import format_duration, format_steps, format_time, short_model
from ..palette import plain_palette
from ..services.catalog import RunInfo, list_runs
from .common import add_runs_dir


def register(sub) -> None:
    parser = sub.add_parser("runs", help="list runs: status, step, last reward, warnings")
    add_runs_dir(parser)
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from rich.console import Console

    runs = list_runs(args.runs_dir)
    if args.json:
        # orjson: the same JSON as json.dumps(indent=2), many times faster on thousands of rows
        sys.stdout.write(orjson.dumps([r.to_dict() for r in runs], option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    if not runs:
        print(f"no runs in {args.runs_dir or os.environ.get(RUNS_DIR_ENV) or './runs'}")
        return 0
    Console().print(format_table(runs))
    return 0


def format_table(runs: list[RunInfo]) -> Table:
    palette = plain_palette()
    table = Table(box=None, header_style="bold", pad_edge=False, collapse_padding=True)
    for name in ("id", "project", "model", "status", "step", "reward", "warnings", "started", "duration"):
        # only the free-text columns give way on a narrow terminal, cut short rather than wrapped
        shrinks = name in ("project", "model", "warnings")
        table.add_column(name, justify="right" if name in ("step", "reward", "duration") else "left",
                         no_wrap=not shrinks, overflow="ellipsis", min_width=4 if shrinks else None)
    for run in runs:
        reward = "-" if run.last_reward is None else f"{run.last_reward:.3f}"
        warnings = Text(f"{run.warnings} ({run.last_warning})" if run.warnings else "0",
                        style=palette.role("warning") if run.warnings else "dim", no_wrap=True, overflow="ellipsis")
        table.add_row(Text(run.run_id), Text(run.project or "-"), Text(short_model(run.model)),
                      Text(str(run.status), style=palette.status(run.status)), format_steps(run.step, run.total),
                      reward, warnings, format_time(run.started), format_duration(run.duration))
    return table
