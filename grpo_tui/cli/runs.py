"""``grpo-tui runs``: every run with its status, step, last reward, held-out and warnings, as a table or JSON.

``held-out`` is the best held-out value of the run's ranking metric (``RunInfo.held_out``), as the app's runs list
shows it; ``-`` for a run without evals. The terminal's table also shows each run's name and tags. Every figure is
of the run's live history (run/rewinds.py); a run that went back to an older checkpoint has ``↺N`` (N rewinds)
after its steps, and ``rewinds`` in its JSON row.

A run whose events.jsonl ends with lines that are no event (``line_check.py``: its last 64 KiB are checked, never
a whole long file) gets a ``skipped`` column, shown only when some listed run has such lines, and every JSON row
says it in ``skipped_lines``; ``grpo-tui watch --once RUN`` names the first of them.

With ``--host`` (repeatable) or ``--all-hosts`` the runs of several machines are listed together, each
host asked in parallel; a host that cannot be reached gets its one-line error and does not hide the others.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import orjson
from rich.table import Table
from rich.text import Text

from grpo_tui.services.catalog.folders import RunInfo
from trainer_core.contract.run.folder import RUNS_DIR_ENV

from ..executors.base import ExecutorError
from ..executors.hosts import LOCAL, HostError, load_hosts
from ..formatting import format_duration, format_steps, format_time, short_model
from ..palette import plain_palette
from ..safe_text import clean_line, json_bytes
from .common import BadInput, add_runs_dir


def register(sub) -> None:
    parser = sub.add_parser(
        "runs",
        help="list runs: status, step, last reward, warnings, lines of events.jsonl skipped (of one host or several)",
        description="List runs. A 'skipped' column appears when some run's events.jsonl has lines at its end (the "
        "last 64 KiB are checked) that are no event and were skipped; 'grpo-tui watch --once RUN' names the first.",
    )
    parser.add_argument("refs", nargs="*", metavar="RUN", help="list only these runs (id, prefix, 'latest')")
    add_runs_dir(parser)
    parser.add_argument(
        "--host",
        action="append",
        default=None,
        metavar="NAME",
        help=f"list that host's runs ('{LOCAL}' is this machine); repeat for several (docs/hosts.md)",
    )
    parser.add_argument("--all-hosts", action="store_true", help="this machine and every host of the hosts file")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the list as JSON (each row has its host, null: this machine; and skipped_lines: "
        '{"events.jsonl": {count, first, checked_from}}, {} when none, null when not checked)',
    )
    parser.set_defaults(handler=run)


def local_runs(args) -> list[RunInfo]:
    from .remote import executor

    try:
        return executor(args, LOCAL).list_runs(args.refs or None).runs
    except ExecutorError as exc:
        raise BadInput(str(exc)) from None


def host_names(args) -> list[str]:
    names = list(args.host or [])
    if args.all_hosts:
        try:
            names = [LOCAL, *load_hosts(), *names]
        except HostError as exc:
            raise BadInput(str(exc)) from None
    return list(dict.fromkeys(names))


def gather(args, names: list[str]) -> tuple[list[RunInfo], list[str]]:
    """The runs of every host (in order), and an error line per host that could not be listed."""
    from .remote import executors, say_problem

    registry = executors(args)

    def one(name: str) -> list[RunInfo]:
        listed = registry.get(name).list_runs(args.refs or None)
        if listed.error:  # rows the host sent that were left out: said, and the others listed
            say_problem(listed.error)
        return listed.runs

    runs, errors = [], []
    with ThreadPoolExecutor(max_workers=min(8, len(names))) as pool:
        futures = [pool.submit(one, name) for name in names]
        for future in futures:
            try:
                runs += future.result()
            except ExecutorError as exc:
                errors.append(str(exc))
    return runs, errors


def run(args) -> int:
    from rich.console import Console

    names = host_names(args)
    errors: list[str] = []
    if names and names != [LOCAL]:
        runs, errors = gather(args, names)
    else:
        runs = local_runs(args)
    for error in errors:
        print(f"error: {clean_line(error)}", file=sys.stderr)
    if args.json:
        # orjson: the same JSON as json.dumps(indent=2), many times faster on thousands of rows
        sys.stdout.write(
            json_bytes(orjson.dumps([r.to_wire() for r in runs], option=orjson.OPT_INDENT_2)).decode() + "\n"
        )
    elif not runs and not names:
        print(clean_line(f"no runs in {args.runs_dir or os.environ.get(RUNS_DIR_ENV) or './runs'}"))
    elif not runs:
        print("no runs" + (" on the hosts that answered" if errors else ""))
    elif sys.stdout.isatty():
        Console().print(format_table(runs, hosts=bool(names)))
    else:  # piped: plain columns that never cut an id or a status, for grep, awk and cut
        sys.stdout.write(plain_table(runs, hosts=bool(names)))
    return 1 if errors else 0


def plain_table(runs: list[RunInfo], hosts: bool = False) -> str:
    """Columns padded to their widest cell, two spaces apart, nothing cut (as ``docker ps`` prints); ``skipped`` comes
    last, and only when some run has skipped lines."""
    skipped = any(run.skipped for run in runs)
    header = (["host"] if hosts else []) + [
        "id",
        "status",
        "step",
        "reward",
        "held-out",
        "warnings",
        "started",
        "duration",
        "model",
        "project",
    ]
    if skipped:
        header.append("skipped")
    rows = [header]
    for run in runs:
        reward = "-" if run.last_reward is None else f"{run.last_reward:.3f}"
        warnings = f"{run.warnings} ({run.last_warning})" if run.warnings else "0"
        rows.append(
            [
                clean_line(cell)
                for cell in ([run.host or LOCAL] if hosts else [])
                + [
                    run.run_id,
                    status_text(run),
                    steps_text(run),
                    reward,
                    held_out_text(run),
                    warnings,
                    format_time(run.started),
                    format_duration(run.duration),
                    run.model or "-",
                    run.project or "-",
                ]
                + ([skipped_text(run)] if skipped else [])
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() + "\n" for row in rows)


def held_out_text(run: RunInfo) -> str:
    """The best held-out value of the run's ranking metric (``0.906``); ``-`` without evals."""
    best = run.held_out.best if run.held_out else None
    return "-" if best is None or best.value is None else f"{best.value:.3f}"


REWOUND_MARK = "↺"


def steps_text(run: RunInfo) -> str:
    """The step of the run's live history and its total, with ``↺N`` when it went back to an older checkpoint N
    times (run/rewinds.py): ``28/38↺1``."""
    steps = format_steps(run.step, run.total)
    return f"{steps}{REWOUND_MARK}{run.rewinds}" if run.rewinds else steps


def name_text(run: RunInfo) -> str:
    """The run's name and its tags as ``#tag``; ``-`` without either."""
    return " ".join([run.name or "", *(f"#{tag}" for tag in run.tags)]).strip() or "-"


def status_text(run: RunInfo) -> str:
    """The status, with Slurm's reason for a queued job: ``queued (Resources)``."""
    return f"{run.status} ({run.queue_reason})" if run.queue_reason else str(run.status)


def skipped_text(run: RunInfo) -> str:
    """A run's skipped lines: ``2 (events.jsonl)``; ``0`` when none, ``-`` when not checked (a host that does not say)."""
    if run.skipped is None:
        return "-"
    return ", ".join(f"{s.count} ({name})" for name, s in run.skipped.items()) or "0"


def format_table(runs: list[RunInfo], hosts: bool = False) -> Table:
    palette = plain_palette()
    skipped = any(run.skipped for run in runs)
    table = Table(box=None, header_style="bold", pad_edge=False, collapse_padding=True)
    columns = (("host",) if hosts else ()) + (
        "id",
        "name",
        "project",
        "model",
        "status",
        "step",
        "reward",
        "held-out",
        "warnings",
        *(("skipped",) if skipped else ()),
        "started",
        "duration",
    )
    for name in columns:
        # only the free-text columns give way on a narrow terminal, cut short rather than wrapped
        shrinks = name in ("name", "project", "model", "warnings")
        table.add_column(
            name,
            justify="right" if name in ("step", "reward", "held-out", "duration") else "left",
            no_wrap=not shrinks,
            overflow="ellipsis",
            min_width=4 if shrinks else None,
        )
    for run in runs:
        reward = "-" if run.last_reward is None else f"{run.last_reward:.3f}"
        warnings = Text(
            clean_line(f"{run.warnings} ({run.last_warning})" if run.warnings else "0"),
            style=palette.role("warning") if run.warnings else "dim",
            no_wrap=True,
            overflow="ellipsis",
        )
        marker = Text(clean_line(skipped_text(run)), style=palette.role("warning") if run.skipped else "dim")
        cells = [
            _cell(run.run_id),
            Text(clean_line(name_text(run)), no_wrap=True, overflow="ellipsis"),
            _cell(run.project or "-"),
            _cell(short_model(run.model)),
            Text(clean_line(status_text(run)), style=palette.status(run.status)),
            _cell(steps_text(run)),
            reward,
            held_out_text(run),
            warnings,
            *([marker] if skipped else []),
            format_time(run.started),
            format_duration(run.duration),
        ]
        table.add_row(*([_cell(run.host or LOCAL)] if hosts else []), *cells)
    return table


def _cell(text: object) -> Text:
    return Text(clean_line(text))
