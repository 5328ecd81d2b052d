"""The launch form's Slurm settings, one input each, instead of a JSON mapping to type by hand.

A switch says whether the run is submitted as a Slurm batch job; the inputs are the ``launch --slurm`` flags:
partition (``--partition``), time (``--time``), nodes (``--nodes``), GPUs per node (``--gpus-per-node``), extra
sbatch options (``--sbatch-arg``, one per word, quoted as a shell would) and grace (``--slurm-grace``). They
build the same ``slurm`` mapping those flags build (``cli/launch.py``: only what is given, a time in plain
minutes as a number, the switch alone ``{"nodes": 1}``), and nothing here checks it: RunConfig's checks
(``trainer_core.contract.config.slurm_settings``) do, with the messages the CLI prints. A value that is not what
its setting takes (``two`` nodes) is passed on as it is, so that check names it. The form shows the messages
under the field; ``mark`` puts each on the input it concerns too.
"""

from __future__ import annotations

import shlex
from typing import Any

from textual.app import ComposeResult
from textual.containers import Container, Vertical
from textual.message import Message
from textual.widgets import Input, Label, Switch

from trainer_core.contract.config.slurm_settings import KEYS

from .ordered_keys import OrderedInput

INPUTS = (  # key, label, what it takes
    ("partition", "partition", "the cluster's default"),
    ("time", "time", "minutes or [D-]HH:MM:SS; the partition's limit"),
    ("nodes", "nodes", "1"),
    ("gpus_per_node", "GPUs per node", "none"),
    ("sbatch_args", "sbatch options", "e.g. --account=lab --qos=high"),
    ("grace", "grace (s)", "300: TERM before the time limit"),
)
COUNTS = ("nodes", "gpus_per_node", "grace")


def _number(text: str) -> Any:
    """A whole number as an int; anything else as typed, for the check to name."""
    try:
        return int(text)
    except ValueError:
        return text


def settings_from(submit: bool, values: dict[str, str], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``slurm`` mapping of the switch and the inputs' text, as ``launch --slurm`` and its flags build it."""
    if not submit:
        return {}
    settings: dict[str, Any] = dict(extra or {})
    for key, _, _ in INPUTS:
        text = values.get(key, "").strip()
        if not text:
            continue
        if key in COUNTS:
            settings[key] = _number(text)
        elif key == "time":
            settings[key] = int(text) if text.isdigit() else text
        elif key == "sbatch_args":
            try:
                settings[key] = shlex.split(text)
            except ValueError:  # an unclosed quote: the check says what sbatch_args takes
                settings[key] = text
        else:
            settings[key] = text
    return settings or {"nodes": 1}


def text_of(key: str, value: Any) -> str:
    """An input's text for a setting's value (from a config file)."""
    if value is None:
        return ""
    if key == "sbatch_args" and isinstance(value, list):
        return shlex.join(str(v) for v in value)
    return str(value)


class SlurmFields(Vertical):
    """The switch and the six inputs; ``settings`` is the mapping they make."""

    DEFAULT_CSS = """
    SlurmFields { height: auto; }
    SlurmFields .slurm-grid { layout: grid; grid-size: 2; grid-columns: 18 1fr; grid-rows: auto; height: auto; }
    SlurmFields .slurm-name { width: 100%; color: $text-muted; }
    SlurmFields .slurm-name.-problem { color: $error; }
    SlurmFields Switch { height: 1; border: none; padding: 0; }
    SlurmFields Switch:focus { border: none; background-tint: $primary 25%; }
    SlurmFields Input.-textual-compact { background: $boost; width: 1fr; }
    SlurmFields Input.-textual-compact:focus { background-tint: $primary 25%; }
    SlurmFields Input:disabled { opacity: 60%; }
    """

    class Changed(Message):
        """The switch or an input changed."""

        def __init__(self, fields: SlurmFields):
            super().__init__()
            self.fields = fields

        @property
        def control(self) -> SlurmFields:
            return self.fields

    def __init__(self, settings: Any = None, *, id: str | None = None):
        super().__init__(id=id)
        self._initial = settings
        self._extra: dict[str, Any] = {}  # settings no input shows (an unknown key from a file)

    def compose(self) -> ComposeResult:
        with Container(classes="slurm-grid"):
            yield Label("submit to Slurm", classes="slurm-name", id="slurm-name-submit")
            yield Switch(False, id="slurm-submit")
            for key, label, placeholder in INPUTS:
                yield Label(label, classes="slurm-name", id=f"slurm-name-{key}")
                yield OrderedInput(
                    "",
                    type="integer" if key in COUNTS else "text",
                    placeholder=placeholder,
                    valid_empty=True,
                    compact=True,
                    select_on_focus=False,
                    id=f"slurm-{key}",
                )

    def on_mount(self) -> None:
        self.show(self._initial)

    # -- what the form calls ---------------------------------------------------------------------------

    @property
    def _composed(self) -> bool:
        return bool(self.query("#slurm-submit"))

    @property
    def submit(self) -> bool:
        return self.query_one("#slurm-submit", Switch).value

    def input(self, key: str) -> Input:
        return self.query_one(f"#slurm-{key}", Input)

    @property
    def settings(self) -> dict[str, Any]:
        """The ``slurm`` mapping the switch and inputs make ({}: the run runs here)."""
        if not self._composed:  # not composed yet: what it was given
            return dict(self._initial) if isinstance(self._initial, dict) else {}
        values = {key: self.input(key).value for key, _, _ in INPUTS}
        return settings_from(self.submit, values, self._extra)

    def show(self, settings: Any) -> None:
        """Show ``settings`` (a ``slurm`` mapping from a config): the switch on when there are any. Keys that no
        input shows (an unknown one) are kept, so the check names them."""
        settings = settings if isinstance(settings, dict) else {}
        self._initial = settings
        self._extra = {k: v for k, v in settings.items() if k not in {key for key, _, _ in INPUTS}}
        if not self._composed:
            return
        with self.prevent(Switch.Changed, Input.Changed):
            self.query_one("#slurm-submit", Switch).value = bool(settings)
            for key, _, _ in INPUTS:
                self.input(key).value = text_of(key, settings.get(key))
        self._enable()

    def mark(self, messages: list[str]) -> None:
        """Mark the inputs the form's messages about the ``slurm`` field name (``slurm nodes must be …``)."""
        for key in KEYS:
            named = any(message.startswith(f"slurm {key} ") for message in messages)
            if key == "grace":
                named = named or any("slurm grace" in message for message in messages)
            self.query_one(f"#slurm-name-{key}", Label).set_class(named, "-problem")

    def focus(self, scroll_visible: bool = True) -> SlurmFields:
        """Focus the first input marked with a problem, else the switch."""
        marked = [key for key, _, _ in INPUTS if self.query_one(f"#slurm-name-{key}", Label).has_class("-problem")]
        target = self.input(marked[0]) if marked and self.submit else self.query_one("#slurm-submit", Switch)
        target.focus(scroll_visible)
        return self

    # -- changes ---------------------------------------------------------------------------------------

    def _enable(self) -> None:
        for key, _, _ in INPUTS:
            self.input(key).disabled = not self.submit

    def on_switch_changed(self, event: Switch.Changed) -> None:
        event.stop()
        self._enable()
        self.post_message(self.Changed(self))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Changed(self))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.screen.focus_next()


__all__ = ["INPUTS", "SlurmFields", "settings_from", "text_of"]
