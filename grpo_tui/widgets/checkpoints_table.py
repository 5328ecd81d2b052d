"""The monitor's Checkpoints tab: every checkpoint with its step's held-out metrics, its size and its marks.

It shows what the screen's worker read (``services/catalog/checkpoints.py``): the ledger of a run here, or, for
a run on another host, the list its events tell (sizes unknown: checkpoints are not mirrored). The marks
are the ledger's: ``best`` (what ``--checkpoint best`` resolves to), ``last``, ``final`` and ``torn``. A run whose
evals record their engine has an ``engine`` column (vllm or transformers), as ``grpo-tui checkpoints`` has.
Names and metric names come from the run folder: every cell is a ``Text``, never markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from grpo_tui.services.catalog.checkpoints import CheckpointList, human_size

from ..safe_text import clean_line

MARK_ORDER = ("best", "final", "last", "torn")


def _note(listed: CheckpointList, where: str | None) -> str:
    if not listed.rows:
        return "no checkpoints yet"
    parts = [f"{len(listed.rows)} checkpoints"]
    if listed.metric:
        parts.append(f"best by held-out {listed.metric}")
    if listed.from_events:
        parts.append(f"from the run's events: the checkpoints stay {where or 'on the host'}, sizes unknown")
    return " · ".join(parts)


class CheckpointsTable(DataTable):
    DEFAULT_CSS = "CheckpointsTable { height: 1fr; }"

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True

    def show(self, listed: CheckpointList, names: list[str]) -> None:
        """One row per checkpoint; a column per held-out metric in ``names`` (and any other the rows hold but
        a spread: ``NAME/std`` says little of one checkpoint)."""
        extra = [k for row in listed.rows for k in row.metrics if k not in names and not k.endswith("/std")]
        metrics = [*names, *dict.fromkeys(extra)]
        self.clear(columns=True)
        self.add_column(Text("checkpoint"), key="name")
        self.add_column(Text("step", justify="right"), key="step")
        for name in metrics:
            self.add_column(Text(clean_line(name), justify="right"))
        engines = any(row.engine for row in listed.rows)
        if engines:
            self.add_column(Text("engine"), key="engine")
        self.add_column(Text("size", justify="right"), key="size")
        self.add_column(Text("marks"), key="marks")
        for row in listed.rows:
            marks = sorted(row.marks, key=lambda m: MARK_ORDER.index(m) if m in MARK_ORDER else len(MARK_ORDER))
            values = [row.metrics.get(name) for name in metrics]
            self.add_row(
                Text(clean_line(row.name), style="bold" if "best" in row.marks else ""),
                Text(f"{row.step:,}", justify="right"),
                *(Text("-" if v is None else f"{v:.3f}", justify="right") for v in values),
                *([Text(clean_line(row.engine or "-"))] if engines else []),
                Text(human_size(row.size), justify="right"),
                Text(clean_line(" ".join(marks))),
                key=row.name,
            )


class CheckpointsPanel(Vertical):
    """A line saying what the list is (ranked by which metric, read from where), over the table."""

    DEFAULT_CSS = """
    CheckpointsPanel { height: 1fr; }
    CheckpointsPanel #checkpoints-note { height: auto; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, where: str | None = None, id: str | None = None):
        super().__init__(id=id)
        self.where = where
        self.listed = CheckpointList()

    def compose(self) -> ComposeResult:
        yield Static(Text("reading the checkpoints…"), id="checkpoints-note")
        yield CheckpointsTable(id="checkpoints-table")

    def show(self, listed: CheckpointList, names: list[str]) -> None:
        self.listed = listed
        self.query_one("#checkpoints-note", Static).update(Text(clean_line(_note(listed, self.where))))
        self.query_one(CheckpointsTable).show(listed, names)
