"""``grpo-tui checkpoints``: a run's checkpoints with the held-out metrics of their steps, best marked.

Which checkpoint to keep, merge or resume from is a question of held-out quality, not of recency: this lists
the checkpoint ledger (``trainer_core.contract.run.ledger``) so the answer is one command away, as a table
(plain padded columns that never cut a name) or as JSON. Metric names come from the run and are shown
literally, control characters made visible. With ``--host`` the host's own grpo-tui lists its run.
"""

from __future__ import annotations

import sys

import orjson

from trainer_core.contract.run.ledger import LedgerEntry, default_metric, read_ledger

from ..safe_text import clean_line, json_bytes
from .common import BadInput, add_host, add_run_ref, resolve


def register(sub) -> None:
    parser = sub.add_parser(
        "checkpoints",
        help="list a run's checkpoints: step, held-out metrics, size, marks (best, last, final, torn, abandoned)",
    )
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument(
        "--metric",
        metavar="NAME",
        default=None,
        help="the held-out metric that picks the best checkpoint (default: the run's --keep-best metric, "
        "else its first task metric, else reward)",
    )
    parser.add_argument("--json", action="store_true", help="print {metric, checkpoints: [...]} as JSON")
    parser.set_defaults(handler=run, forward=True)


def run(args) -> int:
    folder = resolve(args)
    metric = args.metric or default_metric(folder.path)
    entries = read_ledger(folder.path, metric)
    names = metric_columns(entries)
    if args.metric and args.metric not in names:
        known = ", ".join(names) or "none: the run has no held-out set"
        raise BadInput(
            clean_line(f"--metric {args.metric!r}: no checkpoint of run {folder.run_id} has it; its metrics: {known}")
        )
    if args.json:
        record = {"run_id": folder.run_id, "metric": metric, "checkpoints": [e.to_json() for e in entries]}
        sys.stdout.write(json_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2)).decode() + "\n")
        return 0
    if not entries:
        print(clean_line(f"run {folder.run_id} has no checkpoints"))
    elif not names:
        print(clean_line(f"run {folder.run_id} has no held-out set: its checkpoints are listed without metrics"))
    else:
        print(clean_line(f"best by held-out {metric}"))
    if entries:
        sys.stdout.write(table(entries, names))
    return 0


def metric_columns(entries: list[LedgerEntry]) -> list[str]:
    """The held-out figures the checkpoints carry, in the order met, the spread (``NAME/std``) left out."""
    names = dict.fromkeys(name for e in entries for name in e.metrics if not name.endswith("/std"))
    return list(names)


def table(entries: list[LedgerEntry], names: list[str]) -> str:
    """Columns padded to their widest cell, two spaces apart, nothing cut."""
    engines = any(e.engine for e in entries)  # a run that records its eval engine: a column for it
    rows = [["checkpoint", "step", *names, *(["engine"] if engines else []), "size", "marks"]]
    for e in entries:
        values = [_value(e.metrics.get(name)) for name in names]
        engine = [e.engine or "-"] if engines else []
        rows.append([e.name, str(e.step), *values, *engine, _size(e.size), ", ".join(e.marks) or "-"])
    rows = [[clean_line(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() + "\n" for row in rows)


def _size(size: int) -> str:
    """Bytes in binary units (``1.0 KiB``, ``3.2 GiB``)."""
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    power = min(len(units) - 1, max(0, (size.bit_length() - 1) // 10))
    return f"{size} B" if power == 0 else f"{size / 1024**power:.1f} {units[power]}"


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
