"""The launch screen's config bars: start from a preset; load a config file into the form or save it.

They are widgets that only say what the user asked for (``PresetBar.Chosen``, ``ConfigFileBar.Load`` /
``ConfigFileBar.Save``) and show what came of it; the screen decides what that does to the form, so the
settings live in one place (the form) and reading or writing files stays out of the widgets. What a save
writes is decided here (``save_config_file``), beside the bar that asks for it: notify URLs are secrets, and
a config file is made to be kept, copied and shared, so it gets them masked.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

import yaml
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Label, Select, Static

from trainer_core.contract.alerts.targets import Target
from trainer_core.contract.config.notify_urls import NOTIFY_ENV, is_masked, masked_urls
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.atomic_files import write_bytes_atomic

from ..presets import PRESETS
from .status_line import StatusLine

NO_PATH_TEXT = "Enter the path of a YAML or JSON config file first."
PRIVATE = 0o600


def save_config_file(config: RunConfig, path: Path) -> str:
    """Write ``config`` to ``path`` (YAML for .yaml/.yml, else JSON) with its notify URLs masked, replaced in one
    step (a reader, or a crash, never leaves half a file); what to tell the user. The file is private (0600)
    wherever a secret of a URL would still be in it (another field repeating one), else it gets the usual mode
    (the old file's, or what the umask gives). Raises OSError."""
    urls = config.notify if isinstance(config.notify, list) else []
    real = [u for u in urls if isinstance(u, str) and not is_masked(u)]
    data = replace(config, notify=masked_urls(urls)).to_dict()
    if path.suffix in (".yaml", ".yml"):
        text = yaml.safe_dump(data, sort_keys=False)
    else:
        import json

        text = json.dumps(data, indent=2) + "\n"
    secret = any(part in text for url in real for part in Target(url).secrets())
    mode = PRIVATE if secret else _usual_mode(path)
    write_bytes_atomic(path, text.encode())  # created 0600, so nothing is readable before the chmod below
    os.chmod(path, mode)
    note = ""
    if real:
        note = (
            f" (its {len(real)} notify URL(s) masked: keep the real ones in the settings file or ${NOTIFY_ENV}, "
            "docs/alerts.md)"
        )
    return f"saved {path}{note}" + (" with mode 0600: it still holds a secret" if secret else "")


def _usual_mode(path: Path) -> int:
    """The mode of the file being replaced, else 0666 less the umask (as ``open`` would create it)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        pass
    try:
        with open("/proc/self/status") as fh:
            umask = next(int(line.split()[1], 8) for line in fh if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        umask = 0o022
    return 0o666 & ~umask


class PresetBar(Vertical):
    """A preset chooser that falls back to its prompt after each choice, so a preset can be applied again."""

    DEFAULT_CSS = """
    PresetBar { height: auto; }
    PresetBar .row { height: auto; }
    PresetBar .row > Label { width: 30; padding-right: 1; text-style: bold; }
    PresetBar #preset { width: 1fr; }
    PresetBar #preset-description { color: $text-muted; }
    """

    class Chosen(Message):
        """The user picked preset ``name``."""

        def __init__(self, bar: PresetBar, name: str):
            super().__init__()
            self.bar = bar
            self.name = name

        @property
        def control(self) -> PresetBar:
            return self.bar

    def compose(self) -> ComposeResult:
        with Horizontal(classes="row"):
            yield Label("start from")
            yield Select(
                [(name, name) for name in PRESETS],
                prompt="choose a preset (fills the fields it names)",
                compact=True,
                id="preset",
            )
        yield Static(id="preset-description", markup=False)

    def describe(self, text: str) -> None:
        """The line under the chooser: what the last preset did, or why it could not."""
        self.query_one("#preset-description", Static).update(Content(text))

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "preset" or event.value is Select.BLANK:
            return
        event.stop()
        self.post_message(self.Chosen(self, str(event.value)))
        # back to the prompt, so the same preset can be applied again after edits
        with event.select.prevent(Select.Changed):
            event.select.clear()


class _FileRequest(Message):
    def __init__(self, bar: ConfigFileBar, path: Path):
        super().__init__()
        self.bar = bar
        self.path = path

    @property
    def control(self) -> ConfigFileBar:
        return self.bar


class ConfigFileBar(Vertical):
    """A path field with Load and Save buttons, and the outcome of the last attempt under them."""

    DEFAULT_CSS = """
    ConfigFileBar { height: auto; }
    ConfigFileBar .row { height: auto; }
    ConfigFileBar #files Button { margin-left: 1; }
    ConfigFileBar Input.-textual-compact { background: $boost; width: 1fr; }
    ConfigFileBar Input.-textual-compact:focus { background-tint: $primary 25%; }
    """

    class Load(_FileRequest):
        """Load the config file at ``path`` into the form."""

    class Save(_FileRequest):
        """Save the form's config to ``path``."""

    def compose(self) -> ComposeResult:
        with Horizontal(classes="row", id="files"):
            yield Input(placeholder="path of a .yaml or .json config", compact=True, id="config-path")
            yield Button("Load (ctrl+o)", compact=True, id="load")
            yield Button("Save (ctrl+s)", compact=True, id="save")
        yield StatusLine(id="file-status")

    def path(self) -> Path | None:
        """The path typed in, else None after saying that one is needed (and focusing the field)."""
        field = self.query_one("#config-path", Input)
        text = field.value.strip()
        if not text:
            self.report(NO_PATH_TEXT, "-error")
            field.focus()
            return None
        return Path(text).expanduser()

    def request_load(self) -> None:
        path = self.path()
        if path is not None:
            self.post_message(self.Load(self, path))

    def request_save(self) -> None:
        path = self.path()
        if path is not None:
            self.post_message(self.Save(self, path))

    def report(self, text: str, kind: str) -> None:
        """How the last load or save went (``-ok`` / ``-error``)."""
        self.query_one("#file-status", StatusLine).show(text, kind)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        requests = {"load": self.request_load, "save": self.request_save}
        request = requests.get(event.button.id or "")
        if request:
            event.stop()
            request()
