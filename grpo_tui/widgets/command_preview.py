"""The command preview: the exact ``grpo-tui launch`` command line that starts the run the screen shows.

A setup found in the app should be scriptable, so the preview is not a summary but the command itself:
built from the same ``config_to_argv`` the CLI parses back (tests round-trip it through the parser) and
quoted with ``shlex.join``, so it can be pasted into a shell. Slurm settings are written as ``--slurm`` and
its flags (``--partition``, ``--time``, ...), which ``cli/launch.py`` turns back into the same mapping. Notify
URLs are secrets, and a screen is seen (and captured) by others: they are shown masked (``--notify
https://hooks.slack.com/***``); the real ones belong in the settings file or ``$GRPO_TUI_NOTIFY``. When
the settings cannot make a command yet, it says why instead. The screen decides when to update it; the widget only knows how to write it.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from grpo_tui.config_flags import config_to_argv
from trainer_core.contract.config.notify_urls import mask, masked_urls
from trainer_core.contract.config.run_config import RunConfig

SLURM_FLAGS = {"partition": "--partition", "time": "--time", "nodes": "--nodes", "gpus_per_node": "--gpus-per-node"}


def _slurm_words(settings: dict) -> tuple[list[str], dict]:
    """``--slurm`` and the ``launch`` flags of the settings they can say, and the settings left over (for
    ``--slurm-option``): a value of another type than its flag takes is left to the check to name."""
    words, rest = ["--slurm"], {}
    for key, value in settings.items():
        number = isinstance(value, int) and not isinstance(value, bool)
        if key == "partition" and isinstance(value, str) and value and not value.startswith("-"):
            words += [SLURM_FLAGS[key], value]
        elif key == "time" and (number or (isinstance(value, str) and value and not value.startswith("-"))):
            words += [SLURM_FLAGS[key], str(value)]
        elif key in ("nodes", "gpus_per_node") and number:
            words += [SLURM_FLAGS[key], str(value)]
        elif key == "grace" and number:
            words += ["--slurm-grace", str(value)]
        elif key == "sbatch_args" and isinstance(value, list) and value and all(isinstance(a, str) for a in value):
            words += [f"--sbatch-arg={arg}" for arg in value]
        else:
            rest[key] = value
    return words, rest


def launch_command(
    config: RunConfig, runs_dir: str | Path, gpus: list[int] | None = None, num_processes: int | None = None
) -> list[str]:
    """The argv of ``grpo-tui launch`` for ``config`` with this placement (None: the CLI's default); Slurm
    settings as ``--slurm`` and its flags, which build the same ``slurm`` mapping back; notify URLs masked."""
    config = replace(config, notify=masked_urls(config.notify))
    slurm_words: list[str] = []
    if config.slurm and isinstance(config.slurm, dict):
        slurm_words, rest = _slurm_words(config.slurm)
        config = replace(config, slurm=rest)
    argv = ["grpo-tui", "launch", *config_to_argv(config), *slurm_words]
    if gpus is not None:
        argv += ["--gpus", ",".join(map(str, gpus))]
    if num_processes is not None:
        argv += ["--num-processes", str(num_processes)]
    return [*argv, "--runs-dir", str(runs_dir)]


def masked_words(argv: list[str]) -> list[str]:
    """``argv`` with the URL of each ``--notify URL`` and ``--notify=URL`` masked."""
    out = list(argv)
    for i, word in enumerate(out):
        if word == "--notify" and i + 1 < len(out):
            out[i + 1] = mask(out[i + 1])
        elif word.startswith("--notify="):
            out[i] = "--notify=" + mask(word.split("=", 1)[1])
    return out


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
        """``argv`` as a shell line, each notify URL in it masked (whoever built it)."""
        self._show("$ " + shlex.join(masked_words(argv)), error=False)

    def show_problem(self, problem: Exception | str) -> None:
        self._show(f"no command yet: {problem}", error=True)

    def _show(self, text: str, error: bool) -> None:
        if text == self.text:
            return
        self.text = text
        preview = self.query_one("#preview", Static)
        preview.update(Content(text))
        preview.set_class(error, "-error")
