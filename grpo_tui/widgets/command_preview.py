"""The command preview: the exact ``grpo-tui launch`` command line that starts the run the screen shows.

A setup found in the app should be scriptable, so the preview is not a summary but the command itself:
built from the same ``config_to_argv`` the CLI parses back (tests round-trip it through the parser) and
quoted with ``shlex.join``, so it can be pasted into a shell. When the settings cannot make a command yet,
it says why instead. The screen decides when to update it; the widget only knows how to write it.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from trainer_core.contract.cli_args import config_to_argv
from trainer_core.contract.config import RunConfig


def launch_command(
    config: RunConfig, runs_dir: str | Path, gpus: list[int] | None = None, num_processes: int | None = None
) -> list[str]:
    """The argv of ``grpo-tui launch`` for ``config`` with this placement (None: the CLI's default)."""
    argv = ["grpo-tui", "launch", *config_to_argv(config)]
    if gpus is not None:
        argv += ["--gpus", ",".join(map(str, gpus))]
    if num_processes is not None:
        argv += ["--num-processes", str(num_processes)]
    return [*argv, "--runs-dir", str(runs_dir)]


class CommandPreview(VerticalScroll):
    """``$ grpo-tui launch ...`` (scrolls when long), or ``no command yet: <why>``."""

    DEFAULT_CSS = """
    CommandPreview { height: auto; max-height: 5; background: $panel; padding: 0 1; }
    CommandPreview #preview.-error { color: $warning; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.text = ""

    def compose(self) -> ComposeResult:
        yield Static(id="preview", markup=False)

    def show_command(self, argv: list[str]) -> None:
        self._show("$ " + shlex.join(argv), error=False)

    def show_problem(self, problem: Exception | str) -> None:
        self._show(f"no command yet: {problem}", error=True)

    def _show(self, text: str, error: bool) -> None:
        if text == self.text:
            return
        self.text = text
        preview = self.query_one("#preview", Static)
        preview.update(Content(text))
        preview.set_class(error, "-error")
