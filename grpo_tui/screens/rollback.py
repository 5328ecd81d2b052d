"""The Roll back… dialog: which checkpoint to go back to, the settings to change, why, and the exact command.

It lists the run's checkpoints as ``grpo-tui checkpoints RUN`` does (the ledger: step, held-out metric, marks),
with the best preselected (else the last), asks for a new learning rate, KL coefficient, any other ``KEY=VALUE``
a resume may change, and a reason, and shows the ``grpo-tui rollback`` command that does the same (an argument
list shown with ``shlex.join``, never run through a shell). The settings are checked as the CLI checks them
(``resume_changes.parse_sets`` and ``apply_sets`` against the run's config): a setting a resume may not change,
or a value its field refuses, is refused here with the CLI's message. The dialog only asks; the rollback is done
by ``rollback_action.py``. The config and the ledger are read by a worker: a ledger checks every checkpoint.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Input, Label
from textual.worker import get_current_worker

from grpo_tui.services.catalog.checkpoints import CheckpointList, CheckpointRow, read_checkpoints
from grpo_tui.services.lifecycle.rollback import REASON_MAX, checked_reason
from trainer_core.contract.config.resume_changes import apply_sets, parse_sets
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

from ..safe_text import clean_line, literal
from ..widgets.checkpoints_table import MARK_ORDER
from ..widgets.command_preview import CommandPreview
from ..widgets.remedies_panel import setting_value


@dataclass(frozen=True)
class RollbackRequest:
    """What the user asked: the checkpoint's step (``--to``), the ``KEY=VALUE`` settings and the reason."""

    to: str
    sets: tuple[str, ...] = ()
    reason: str | None = None


def rollback_argv(
    run_id: str, request: RollbackRequest, *, runs_dir: str | Path | None = None, host: str | None = None
) -> list[str]:
    """The argv of ``grpo-tui rollback`` for ``request``: ``--host`` for a run on a host, else ``--runs-dir``."""
    argv = ["grpo-tui", "rollback", run_id]
    if host:
        argv += ["--host", host]
    argv += ["--to", request.to]
    for word in request.sets:
        argv += ["--set", word]
    if request.reason:
        argv += ["--reason", request.reason]
    if runs_dir is not None and not host:
        argv += ["--runs-dir", str(runs_dir)]
    return argv


def setting_words(lr: str, kl_coef: str, other: str) -> list[str]:
    """The inputs as ``--set`` words: ``lr=…``, ``rl_kl_coef=…`` and the other field split as a shell would
    (``max_steps=60 health.kl_high=2``); ConfigError when that field's quotes are unbalanced."""
    words = [f"{key}={value.strip()}" for key, value in (("lr", lr), ("rl_kl_coef", kl_coef)) if value.strip()]
    try:
        words += shlex.split(other)
    except ValueError as exc:
        raise ConfigError(
            "set", f"other settings: {exc} in {other!r}; write KEY=VALUE words, e.g. max_steps=60."
        ) from None
    return words


def settings_problem(config: RunConfig | None, words: list[str]) -> str | None:
    """Why a rollback may not make these changes (the CLI's words), or None: each must be a setting a resume may
    change (``parse_sets``) with a value its field takes (``apply_sets``, against the run's config)."""
    try:
        sets = parse_sets(words)
        if config is not None:
            apply_sets(config, sets)
    except ConfigError as exc:
        return str(exc)
    return None


def default_row(rows: tuple[CheckpointRow, ...]) -> int | None:
    """The row preselected: the best checkpoint, else the last, else the newest complete one (None: none)."""
    usable = [i for i, row in enumerate(rows) if row.name != "final" and "torn" not in row.marks]
    for mark in ("best", "last"):
        found = next((i for i in usable if mark in rows[i].marks), None)
        if found is not None:
            return found
    return usable[-1] if usable else None


def checkpoint_problem(row: CheckpointRow | None) -> str | None:
    if row is None:
        return "pick a checkpoint to go back to (the run has none a rollback can start from)."
    if row.name == "final":
        return "final/ holds the model alone, without the optimizer state a rollback needs: pick a checkpoint-N."
    if "torn" in row.marks:
        return f"{row.name} is torn (cut short while it was saved): pick a complete checkpoint."
    return None


class RollbackScreen(ModalScreen[RollbackRequest | None]):
    """Ask how to roll back run ``run_id`` (its folder at ``path`` here); dismissed with the request, or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    RollbackScreen { align: center middle; }
    RollbackScreen > VerticalScroll {
        width: 90; max-width: 100%; height: auto; max-height: 100%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    RollbackScreen Label { width: 100%; }
    RollbackScreen #question { text-style: bold; }
    RollbackScreen #checkpoints { height: auto; max-height: 7; margin-top: 1; }
    RollbackScreen #settings { height: auto; margin-top: 1; }
    RollbackScreen .setting { height: 1; }
    RollbackScreen .setting Label { width: 16; }
    RollbackScreen .setting Input { width: 1fr; }
    RollbackScreen #command { margin-top: 1; }
    RollbackScreen #buttons { height: 1; margin-top: 1; }
    RollbackScreen #problem { color: $error; height: auto; margin-top: 1; }
    RollbackScreen #problem.-empty { display: none; }
    RollbackScreen Button { margin-right: 2; }
    """

    def __init__(self, run_id: str, path: str | PathLike[str], status: Status):
        super().__init__()
        self.run_id, self.path, self.status = run_id, Path(path), status
        self.runs_dir = self.path.parent  # the command names the run by its id in the runs dir it is in
        self.config: RunConfig | None = None
        self.listed: CheckpointList | None = None  # None until read
        self.read_error: str | None = None

    def compose(self) -> ComposeResult:
        live = "It is live: it is stopped first (it saves a checkpoint). " if self.status.is_live else ""
        with VerticalScroll():
            yield Label(literal(f"Roll back run {self.run_id} to a checkpoint?"), id="question")
            yield Label(
                literal(f"{live}The steps after the checkpoint are abandoned and trained again, with these settings:"),
                id="detail",
            )
            yield DataTable(id="checkpoints", cursor_type="row", zebra_stripes=True)
            with Vertical(id="settings"):
                for key, label in (("lr", "learning rate"), ("kl", "KL coefficient")):
                    with Horizontal(classes="setting"):
                        yield Label(label)
                        yield Input(id=key, compact=True, placeholder="unchanged")
                with Horizontal(classes="setting"):
                    yield Label("other settings")
                    yield Input(id="other", compact=True, placeholder="KEY=VALUE … e.g. max_steps=60 health.kl_high=2")
                with Horizontal(classes="setting"):
                    yield Label("reason")
                    yield Input(id="reason", compact=True, max_length=REASON_MAX, placeholder="why (recorded with it)")
            yield CommandPreview(id="command")
            with Horizontal(id="buttons"):
                yield Button("Roll back (enter)", variant="primary", id="rollback", compact=True)
                yield Button("Cancel (esc)", id="cancel", compact=True)
            yield Label("", id="problem")

    def on_mount(self) -> None:
        self.query_one("#checkpoints", DataTable).loading = True
        self.read_run()
        self._refresh()

    @work(thread=True, exclusive=True, group="rollback-read", exit_on_error=False)
    def read_run(self) -> None:
        """The run's config and its checkpoint ledger (a worker: the ledger checks each checkpoint on disk)."""
        try:
            config, listed, error = RunConfig.load(RunFolder(self.path).config_file), read_checkpoints(self.path), None
        except (OSError, ValueError, ConfigError) as exc:
            config, listed, error = None, CheckpointList(), f"cannot read run {self.run_id}: {exc}"
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._read, config, listed, error)

    def _read(self, config: RunConfig | None, listed: CheckpointList, error: str | None) -> None:
        self.config, self.listed, self.read_error = config, listed, error
        if config is not None:
            for key, value in (("lr", config.lr), ("kl", config.rl_kl_coef)):
                self.query_one(f"#{key}", Input).placeholder = f"unchanged: {setting_value(value)}"
        table = self.query_one("#checkpoints", DataTable)
        table.loading = False
        metric = listed.metric
        table.add_column(Text("checkpoint"), key="name")
        table.add_column(Text("step", justify="right"), key="step")
        table.add_column(Text(clean_line(f"held-out {metric}" if metric else "held-out"), justify="right"))
        table.add_column(Text("marks"), key="marks")
        for row in listed.rows:
            marks = sorted(row.marks, key=lambda m: MARK_ORDER.index(m) if m in MARK_ORDER else len(MARK_ORDER))
            value = row.metrics.get(metric) if metric else None
            table.add_row(
                Text(clean_line(row.name), style="bold" if "best" in row.marks else ""),
                Text(f"{row.step:,}", justify="right"),
                Text("-" if value is None else f"{value:.3f}", justify="right"),
                Text(clean_line(" ".join(marks))),
                key=row.name,
            )
        chosen = default_row(listed.rows)
        if chosen is not None:
            table.move_cursor(row=chosen)
        table.focus()
        self._refresh()

    @property
    def chosen(self) -> CheckpointRow | None:
        """The checkpoint under the table's cursor."""
        if not self.listed or not self.listed.rows:
            return None
        row = self.query_one("#checkpoints", DataTable).cursor_row
        return self.listed.rows[row] if 0 <= row < len(self.listed.rows) else None

    @property
    def problem(self) -> str:
        """The message shown under the command ('' when none)."""
        return str(self.query_one("#problem", Label).visual)

    @property
    def command(self) -> str:
        """The command shown, as text."""
        return self.query_one(CommandPreview).text

    def request(self) -> tuple[RollbackRequest | None, str | None]:
        """What the inputs ask for, and why it cannot be done (None: it can)."""
        row = self.chosen
        value = {key: self.query_one(f"#{key}", Input).value for key in ("lr", "kl", "other", "reason")}
        try:
            words = setting_words(value["lr"], value["kl"], value["other"])
            reason = checked_reason(value["reason"].strip() or None)
        except ConfigError as exc:
            return None, str(exc)
        if self.listed is None:
            return None, None  # still reading: no command and nothing to refuse yet
        request = RollbackRequest(str(row.step) if row is not None else "?", tuple(words), reason)
        problem = self.read_error or checkpoint_problem(row) or settings_problem(self.config, words)
        return request, problem

    def _refresh(self) -> None:
        request, problem = self.request()
        preview = self.query_one(CommandPreview)
        if request is None:
            preview.show_problem(problem or "reading the run's checkpoints…")
        else:
            preview.show_command(rollback_argv(self.run_id, request, runs_dir=self.runs_dir))
        label = self.query_one("#problem", Label)
        label.update(literal(problem or ""))
        label.set_class(not problem, "-empty")

    def on_input_changed(self, event: Input.Changed) -> None:
        self._refresh()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._refresh()

    def submit(self) -> None:
        request, problem = self.request()
        self._refresh()
        if request is not None and problem is None:
            self.dismiss(request)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.query_one("#lr", Input).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "rollback":
            self.submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
