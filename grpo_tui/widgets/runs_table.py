"""The table of runs: one row per run, newest first, kept in step with the list by changing only what differs.

A runs dir may hold thousands of runs, and a DataTable re-measures every cell of a row it is given, so this
never rebuilds: a changed run updates the cells that differ, a new one is inserted in order, a removed one
drops out, and the cursor stays on the run it was on. A first load adds a screenful of rows at once and the
rest in batches, so the first paint does not wait for the last row. Columns are sized from the cells as
rows are added (before a frame is drawn), so no frame shows them at their headers' width. Statuses are drawn
in the current theme's colours (``palette.py``), redrawn when the theme changes. A run whose events.jsonl ends
with lines that are no event says how many in its warnings cell, as ``grpo-tui runs`` does in its own column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from rich.cells import cell_len
from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from grpo_tui.services.catalog.folders import RunInfo
from grpo_tui.services.records.run_row import labels_of

from ..formatting import format_duration, format_steps, short_model
from ..palette import app_palette
from ..safe_text import clean_line, literal

# most important first: at 80 columns the last ones scroll off to the right
COLUMNS = (
    ("", "mark"),
    ("id", "id"),
    ("name", "name"),  # the run's name and its tags (#tag); blank without either
    ("status", "status"),
    ("step", "step"),
    ("reward", "reward"),
    ("held-out", "held_out"),  # the best held-out value of the run's ranking metric; blank without evals
    ("warnings", "warnings"),
    ("duration", "duration"),
    ("model", "model"),
    ("project", "project"),
)
FIRST_ROWS = 200  # added with the first load: more than a screenful
BATCH_ROWS = 500  # then this many at a time until every run is in the table,
BATCH_SECONDS = 0.03  # with a pause between batches, for the table to measure them and the screen to draw
REBUILD_REMOVED = 50  # more rows gone than this: rebuild the table instead of removing rows one by one


def _width(cell) -> int:
    """What the table measures a cell as (its widest line)."""
    text = cell.plain if isinstance(cell, Text) else str(cell)
    return max((cell_len(line) for line in text.splitlines()), default=0)


def _id(key: str) -> str:
    """The run id of a row key (``host:run_id`` for a remote run; run ids hold no colon)."""
    return key.rpartition(":")[2]


def _same(a, b) -> bool:
    """Cells that look the same (Text's own == ignores its style: a status's colour)."""
    if isinstance(a, Text) and isinstance(b, Text):
        return a.plain == b.plain and a.style == b.style and a.spans == b.spans
    return a == b


class RunsTable(DataTable):
    """``show(runs, changed)`` after every load; ``marked`` runs get a dot in the first column. Rows are keyed
    by ``RunInfo.key`` (the run id, host-prefixed for a remote run); ``hosts`` adds a host column."""

    def __init__(self, hosts: bool = False, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.columns_shown = COLUMNS if not hosts else (*COLUMNS[:2], ("host", "host"), *COLUMNS[2:])
        self.marked: list[str] = []
        self._by_id: dict[str, RunInfo] = {}
        self._cells: dict[str, tuple] = {}  # run id -> the cells its row shows
        self._pending: list[str] = []  # runs still to be added at the bottom (a first load's batches)
        self._filling = False  # a batch is scheduled
        self._partial = False  # the rows are the newest of a first load still being read

    def on_mount(self) -> None:
        for name, key in self.columns_shown:
            self.add_column(name, key=key)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._recolour())

    @property
    def shown(self) -> int:
        """How many runs have their row (the rest of a first load may still be on their way)."""
        return len(self._cells)

    def selected(self) -> RunInfo | None:
        run_id = self._selected_id()
        return None if run_id is None else self._by_id.get(run_id)

    def show(self, runs: list[RunInfo], changed: frozenset[str], partial: bool = False) -> None:
        """Show ``runs`` (newest first), touching only what differs; ``changed``: the runs that may differ.
        ``partial``: the newest runs of a first load still being read (the rest follow)."""
        selected = self._selected_id()
        after_partial, self._partial = self._partial, partial
        self._by_id = {run.key: run for run in runs}
        gone = [] if partial else [run_id for run_id in self._cells if run_id not in self._by_id]
        if len(gone) > REBUILD_REMOVED:
            self.clear()
            self._cells.clear()
            gone = []
        for run_id in gone:
            self.remove_row(run_id)
            del self._cells[run_id]
        palette = app_palette(self.app)
        for run_id in changed:
            if run_id in self._cells and run_id in self._by_id:
                self._update_row(run_id, self._cells_of(self._by_id[run_id], palette))
        new = [run.key for run in runs if run.key not in self._cells]
        if after_partial:  # the rest of a first load: in batches, after the newest already shown
            now, self._pending = [], new
        elif not self._cells:  # a first load (or a rebuild): a screenful now, the rest in batches
            now, self._pending = new[:FIRST_ROWS], new[FIRST_ROWS:]
        else:  # runs that came since: now; those of the first load still waiting keep waiting
            waiting = set(self._pending)
            now = [run_id for run_id in new if run_id not in waiting]
            self._pending = [run_id for run_id in new if run_id in waiting]
        self._add_rows(now, palette)
        if self._pending and not self._filling:
            self._filling = bool(self.set_timer(BATCH_SECONDS, self._add_pending))
        self._restore_cursor(selected)

    def set_marked(self, marked: list[str]) -> None:
        changed, self.marked = set(self.marked) ^ set(marked), list(marked)
        for run_id in changed:
            if run_id in self._cells:
                self._update_row(run_id, (self._mark(run_id), *self._cells[run_id][1:]))

    # -- rows ---------------------------------------------------------------------------------------

    def _mark(self, run_id: str) -> str:
        return "●" if run_id in self.marked else " "

    def _cells_of(self, run: RunInfo, palette) -> tuple:
        reward = "-" if run.last_reward is None else f"{run.last_reward:.3f}"
        warnings = f"{run.warnings} ({run.last_warning})" if run.warnings else "0"
        skipped = sum(s.count for s in (run.skipped or {}).values())
        if skipped:  # lines of the run's files that were no record: `grpo-tui watch --once RUN` names the first
            warnings += f" · {skipped} line{'s' if skipped > 1 else ''} skipped"
        status = f"{run.status} ({run.queue_reason})" if run.queue_reason else str(run.status)
        # free text is literal (safe_text): a project named "[x]" or holding an escape shows as written
        host = (_cell(run.host or "local"),) if len(self.columns_shown) > len(COLUMNS) else ()
        return (
            self._mark(run.key),
            _cell(run.run_id),
            _cell(run_label(run, NAME_CHARS)),
            *host,
            literal(clean_line(status), style=palette.status(run.status), end=""),
            format_steps(run.step, run.total) + (f"↺{run.rewinds}" if run.rewinds else ""),  # went back N times
            reward,
            _held_out(run),
            _cell(warnings),
            format_duration(run.duration),
            _cell(short_model(run.model, 24)),
            _cell(run.project or "-"),
        )

    def _add_rows(self, run_ids: list[str], palette) -> None:
        if not run_ids:
            return
        last = self._row_id(self.row_count - 1) if self.row_count else None
        widths = [0] * len(self.columns_shown)
        for run_id in run_ids:
            cells = self._cells_of(self._by_id[run_id], palette)
            self.add_row(*cells, key=run_id)
            self._cells[run_id] = cells
            widths = [max(w, _width(c)) for w, c in zip(widths, cells)]
        # the columns take the new rows' widths now, before a frame is drawn, not when the table measures them
        for (_, key), width in zip(self.columns_shown, widths):
            column = self.columns[ColumnKey(key)]
            column.content_width = max(column.content_width, width)
        if last is not None and max(_id(k) for k in run_ids) > _id(last):
            self.sort("id", reverse=True, key=lambda cell: cell.plain)  # a run newer than the last row: reorder

    def _add_pending(self) -> None:
        self._filling = False
        if not self._pending or not self.is_attached:
            return
        batch, self._pending = self._pending[:BATCH_ROWS], self._pending[BATCH_ROWS:]
        selected = self._selected_id()
        self._add_rows(
            [run_id for run_id in batch if run_id in self._by_id and run_id not in self._cells], app_palette(self.app)
        )
        self._restore_cursor(selected)
        if self._pending:
            self._filling = bool(self.set_timer(BATCH_SECONDS, self._add_pending))

    def _update_row(self, run_id: str, cells: tuple) -> None:
        for (_, key), old, new in zip(self.columns_shown, self._cells[run_id], cells):
            if not _same(old, new):
                column = self.columns[ColumnKey(key)]
                column.content_width = max(column.content_width, _width(new))
                self.update_cell(run_id, key, new)
        self._cells[run_id] = cells

    def _recolour(self) -> None:
        palette = app_palette(self.app)
        for run_id in list(self._cells):
            self._update_row(run_id, self._cells_of(self._by_id[run_id], palette))

    # -- the cursor -----------------------------------------------------------------------------------

    def _row_id(self, row: int) -> str:
        return cast(str, self.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value)  # every row has key=run_id

    def _selected_id(self) -> str | None:
        return self._row_id(self.cursor_row) if 0 <= self.cursor_row < self.row_count else None

    def _restore_cursor(self, selected: str | None) -> None:
        """Keep the cursor on the run it was on (rows above it may have come or gone)."""
        if selected is None or selected not in self._cells:
            if self.row_count and self.cursor_row >= self.row_count:
                self.move_cursor(row=self.row_count - 1)
            return
        row = self.get_row_index(selected)
        if row != self.cursor_row:
            self.move_cursor(row=row)


NAME_CHARS = 26  # a name cell's longest: status, step and reward stay on screen at 80 columns
LABEL_CHARS = 80  # the monitor's header and Compare's legend: room for a whole name and its tags


def label(name: str | None, tags: Sequence[str], limit: int) -> str:
    """A run's name and its tags as ``#tag``, cut to ``limit`` characters; '' without either."""
    text = " ".join([name or "", *(f"#{tag}" for tag in tags)]).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_label(run: RunInfo, limit: int = LABEL_CHARS) -> str:
    """``label`` of a listed run."""
    return label(run.name, run.tags, limit)


def config_label(config: Mapping[str, Any], limit: int = LABEL_CHARS) -> str:
    """``label`` of a run's config.yaml (as read: it may hold anything)."""
    labels = labels_of(config)
    return label(labels["name"], labels["tags"], limit)


def run_matches(run: RunInfo, query: str) -> bool:
    """Whether every word of ``query`` is found (any case) in the run's id, name, tags, project or model."""
    words = query.lower().split()
    if not words:
        return True
    haystack = " ".join([run.run_id, run.name or "", *run.tags, run.project or "", run.model or ""]).lower()
    return all(word in haystack for word in words)


def _held_out(run: RunInfo) -> str:
    best = run.held_out.best if run.held_out else None
    return "" if best is None or best.value is None else f"{best.value:.3f}"


def _cell(text: object) -> Text:
    return literal(clean_line(text), no_wrap=True, end="")
