"""The held-out evaluation at a glance: the baseline, the latest eval and the best one, side by side.

Training reward says how well the policy games its reward; the held-out metrics say whether it got better at
the task (a reward that keeps rising while a task metric falls is the failure this exists to show). Each
column is one eval (the base model at step 0, the newest, and the one with the highest ranking metric, the
checkpoint ``--checkpoint best`` picks) with its step and how long it took; each row one metric's mean or
pass@K. Metric names come from the run: they are shown literally, control characters made visible.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from trainer_core.contract.run.events import Eval
from trainer_core.contract.run.ledger import known_engine

from ..formatting import format_duration
from ..safe_text import clean_line

EMPTY = "no held-out set: see docs/evaluation.md"


def baseline(evals: Mapping[int, Eval]) -> Eval | None:
    """The base model's eval (step 0), if the run has one."""
    return evals.get(0) or next((e for e in evals.values() if e.base), None)


def latest(evals: Mapping[int, Eval]) -> Eval | None:
    return evals[max(evals)] if evals else None


def best(evals: Mapping[int, Eval], metric: str | None) -> Eval | None:
    """The eval with the highest ``metric`` (the later one on a tie, as the ledger ranks)."""
    scored = [e for e in evals.values() if metric and e.value(metric) is not None]
    return max(scored, key=lambda e: (e.value(metric or ""), e.step)) if scored else None


def _value(event: Eval | None, name: str) -> Text:
    value = event.value(name) if event is not None else None
    return Text("-" if value is None else f"{value:.3f}", justify="right")


def _took(event: Eval | None) -> str:
    seconds = event.seconds if event is not None else None
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return "-"
    took = f"{seconds:.1f} s" if seconds < 60 else format_duration(seconds)
    engine = known_engine(event)  # a run folder's text: only a value grpo-tui writes is shown
    return f"{took} · {engine}" if engine else took


def _header(label: str, event: Eval | None) -> Text:
    return Text(f"{label}\n" + ("-" if event is None else clean_line(f"step {event.step:,}")), justify="right")


def eval_table(evals: Mapping[int, Eval], names: list[str], metric: str | None) -> RenderableType:
    if not evals:
        return Text(EMPTY)
    columns = (
        ("baseline", baseline(evals)),
        ("latest", latest(evals)),
        ("best", best(evals, metric)),
    )
    table = Table(box=None, pad_edge=False, header_style="bold", expand=False)
    table.add_column(Text("held-out metric"), no_wrap=True, overflow="ellipsis", max_width=48)
    for label, event in columns:
        table.add_column(_header(label, event), justify="right", no_wrap=True)
    for name in names:
        style = "bold" if name == metric else ""
        table.add_row(Text(clean_line(name), style=style), *(_value(e, name) for _, e in columns))
    table.add_row(Text("eval took", style="dim"), *(Text(_took(e), style="dim", justify="right") for _, e in columns))
    last = latest(evals)
    assert last is not None  # there are evals
    about = Text(
        clean_line(
            f"{len(evals)} evals · {last.prompts} held-out prompts × {last.generations} generations"
            + (f" · best ranked by {metric}" if metric else "")
            + " · v: overlay the next metric on the reward chart"
        ),
        style="dim",
    )
    return Group(table, Text(""), about)


class EvalPanel(Static):
    """The held-out metrics of the baseline, the latest and the best eval; a line naming the docs without evals."""

    DEFAULT_CSS = "EvalPanel { height: auto; padding: 0 1; }"

    def __init__(self, id: str | None = None):
        super().__init__(Text(EMPTY), id=id)
        self.evals: Mapping[int, Eval] = {}

    def show(self, evals: Mapping[int, Eval], names: list[str], metric: str | None) -> None:
        self.evals = evals
        self.update(eval_table(evals, names, metric))
