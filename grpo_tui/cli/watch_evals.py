"""The held-out panel of the plain ``grpo-tui watch`` (``--once``, or piped): baseline, latest and best eval.

Training reward says how well the policy games its reward; the held-out metrics say whether it got better at
the task. The plain view prints, under the run's frame, each metric's mean at the base model's eval (step 0),
at the latest eval and at the best one (the highest of the run's ranking metric), with their steps. Metric
names come from the run and are shown literally, control characters made visible. Rich only: it prints to a
console, terminal or not.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from grpo_tui.services.catalog.folders import held_out_evals
from grpo_tui.services.records.run_row import EvalFigures
from trainer_core.contract.run.events import Eval
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.ledger import default_metric

from ..safe_text import clean_line

NO_EVALS = "held-out: none (the run has no held-out set; see docs/evaluation.md)"


def eval_panel(folder: RunFolder) -> RenderableType:
    """The run's held-out table, or the line saying it has none."""
    evals = held_out_evals(folder.events_file)
    figures = EvalFigures.of(evals, default_metric(folder.path, evals)) if evals else None
    if figures is None:
        return Text(NO_EVALS, style="dim")
    columns: list[tuple[str, Eval | None]] = [
        ("baseline", evals.get(figures.baseline.step) if figures.baseline else None),
        ("latest", evals.get(figures.latest.step) if figures.latest else None),
        ("best", evals.get(figures.best.step) if figures.best else None),
    ]
    title = Text(clean_line(f"held-out eval (best by {figures.metric})"))
    table = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold")
    table.add_column("metric", no_wrap=True, overflow="ellipsis", max_width=40)
    for label, event in columns:
        table.add_column(label if event is None else f"{label} @{event.step}", justify="right", no_wrap=True)
    names = list(evals[max(evals)].headline())
    for name in names:
        style = "bold" if name == figures.metric else ""
        cells = [_value(event, name) for _, event in columns]
        table.add_row(Text(clean_line(name), style=style), *cells)
    return table


def _value(event: Eval | None, name: str) -> str:
    value = None if event is None else event.value(name)
    return "-" if value is None else f"{value:.3f}"
