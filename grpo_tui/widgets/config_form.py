"""The run settings form, generated from RunConfig's fields.

One section per field group, one input per field, and under each input the field's help text: the same
field specs (``grpo_tui.field_spec``) that write ``--help``, so the form, the CLI and the docs
cannot disagree. Validation is RunConfig's own (``RunConfig.problems``): the form only turns text into
values (``FieldSpec.parse``), so every message shown under a field is the message the CLI would print.
A value that is valid but far outside its usual range (``usual_values.py``: an lr of 4.0) gets a warning under
its field instead, which blocks nothing; the launch screen asks before it launches with one.
The ``slurm`` mapping has inputs of its own, one per ``launch --slurm`` flag (``slurm_fields.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from textual import events
from textual.app import ComposeResult
from textual.containers import Container, Vertical
from textual.content import Content
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Collapsible, Input, Label, Select, Static, Switch, TextArea

from grpo_tui.config_flags import GROUP_TITLES
from grpo_tui.field_spec import FieldSpec, field_specs
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.config.usual_values import Unusual, unusual_values

from .ordered_keys import OrderedInput, OrderedTextArea
from .slurm_fields import SlurmFields

OPEN_GROUPS = ("model", "grpo", "generation", "optimisation")
VALIDATE_DELAY = 0.25


def _input_type(kind: str) -> Literal["integer", "number", "text"]:
    """The Input's type for a field of this kind (it refuses keys that cannot make a number)."""
    if kind == "int":
        return "integer"
    if kind == "float":
        return "number"
    return "text"


def _mentions(message: str, names: set[str]) -> bool:
    return any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", message) for n in names)


class ConfigForm(Vertical):
    """Every RunConfig field as an input, with its help text and its problems shown inline.

    Problems appear as you edit, for the fields you changed and the fields their messages name; with a
    config given at creation, or after ``problems()`` (a launch attempt), every problem shows.
    """

    DEFAULT_CSS = """
    ConfigForm { height: auto; }
    ConfigForm Collapsible { padding-bottom: 0; }
    ConfigForm .fields { layout: grid; grid-size: 2; grid-columns: 30 1fr; grid-rows: auto; height: auto; }
    ConfigForm .field-name { row-span: 2; width: 100%; padding-right: 1; text-style: bold; }
    ConfigForm .field-name.-problem { color: $error; }
    ConfigForm .field-info { color: $text-muted; padding-bottom: 1; }
    ConfigForm Input.-textual-compact { background: $boost; }
    ConfigForm Input.-textual-compact:focus { background-tint: $primary 40%; }
    ConfigForm .field-name.-focused { background: $primary; color: $background; }
    ConfigForm Switch { height: 1; border: none; padding: 0; }
    ConfigForm Switch:focus { border: none; background-tint: $primary 25%; }
    ConfigForm TextArea { height: auto; min-height: 3; max-height: 8; }
    ConfigForm #form-errors { display: none; color: $error; }
    ConfigForm #form-errors.-shown { display: block; }
    """

    class Changed(Message):
        """Posted after a (debounced) validation following any change to the form."""

        def __init__(self, form: ConfigForm):
            super().__init__()
            self.form = form

        @property
        def control(self) -> ConfigForm:
            return self.form

    def __init__(
        self, config: RunConfig | None = None, *, world_size: int = 1, id: str | None = None, classes: str | None = None
    ):
        super().__init__(id=id, classes=classes)
        self.specs = field_specs()
        self._by_name = {s.name: s for s in self.specs}
        self.initial = config or RunConfig()
        self.world_size = world_size
        # a config handed in (from a file, a command line) has its problems shown from the start
        self.show_all = config is not None
        self.touched: set[str] = set()
        self._baseline: dict[str, Any] = {s.name: s.format(getattr(self.initial, s.name)) for s in self.specs}
        self._messages: dict[str, list[str]] = {}
        self._warnings: dict[str, str] = {}  # fields far outside their usual range: a warning, not a problem
        self._json_status: dict[str, tuple[bool, str] | None] = {}
        self._shown_notes: dict[str, tuple[str, str]] = {}
        self._timer: Timer | None = None
        self.external: list[ConfigError] = []

    # -- building ---------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="form-errors", markup=False)
        for group, title in GROUP_TITLES.items():
            specs = [s for s in self.specs if s.group == group]
            if not specs:
                continue
            with Collapsible(title=title, collapsed=group not in OPEN_GROUPS, id=f"group-{group}"):
                with Container(classes="fields"):
                    for spec in specs:
                        yield Label(spec.name, classes="field-name", id=f"name-{spec.name}")
                        yield self._make_widget(spec)
                        yield Static(self._help(spec), classes="field-info", id=f"info-{spec.name}", markup=False)

    def _make_widget(self, spec: FieldSpec) -> Widget:
        value = self._baseline[spec.name]
        wid = f"field-{spec.name}"
        if spec.kind == "bool":
            return Switch(value=value, id=wid)
        if spec.name == "slurm":
            return SlurmFields(self.initial.slurm, id=wid)
        if spec.kind == "choice":
            options = list(spec.choices) + ([value] if value not in spec.choices else [])
            return Select([(c, c) for c in options], value=value, allow_blank=False, compact=True, id=wid)
        if spec.is_json:
            return OrderedTextArea(value, soft_wrap=True, show_line_numbers=False, tab_behavior="focus", id=wid)
        input_type = _input_type(spec.kind)
        placeholder = (spec.required_text or "none") if spec.optional else ""
        return OrderedInput(  # its backspace keeps its place among keys typed fast (ordered_keys.py)
            value,
            type=input_type,
            placeholder=placeholder,
            valid_empty=spec.optional,
            compact=True,
            select_on_focus=False,
            id=wid,
        )

    @staticmethod
    def _help(spec: FieldSpec) -> str:
        default = spec.required_text or json.dumps(spec.default)
        return f"{spec.help} [{spec.flag}; default {default}]"

    def on_mount(self) -> None:
        for spec in self.specs:
            if self._edits_json(spec):
                self._update_json_status(spec)
        self._schedule()

    # -- public API -------------------------------------------------------------------------------------
    def has_field(self, name: str) -> bool:
        return name in self._by_name

    def widget_for(self, name: str) -> Widget:
        return self.query_one(f"#field-{name}")

    def config(self) -> RunConfig:
        """The config the form shows; ConfigError naming the first field whose text is not a value."""
        values, errors = self._read()
        if errors:
            raise next(iter(errors.values()))
        return RunConfig(**values)

    def load(self, config: RunConfig) -> None:
        """Show ``config`` in every field."""
        self.set_values(config.to_dict())

    def set_values(self, values: Mapping[str, Any]) -> None:
        """Show these field values; fields not named keep theirs. Unknown names raise ConfigError."""
        for name, value in values.items():
            spec = self._by_name.get(name)
            if spec is None:
                raise ConfigError(name, f"unknown field '{name}'.")
            raw = spec.format(value)
            self._baseline[name] = raw
            self.touched.add(name)
            widget = self.widget_for(name)
            if isinstance(widget, SlurmFields):
                widget.show(value)
            elif isinstance(widget, Switch):
                widget.value = raw
            elif isinstance(widget, Select):
                if raw not in spec.choices:
                    widget.set_options([(c, c) for c in (*spec.choices, raw)])
                widget.value = raw
            elif isinstance(widget, TextArea):
                widget.text = raw
                self._update_json_status(spec)
            elif isinstance(widget, Input):
                widget.value = raw
        self._schedule()

    def check(self, world_size: int | None = None) -> list[ConfigError]:
        """Every problem, in form order, without showing anything: unparseable text, then RunConfig's."""
        values, errors = self._read()
        found = list(errors.values())
        size = self.world_size if world_size is None else world_size
        found += [p for p in (*RunConfig(**values).problems(size), *self.external) if p.field not in errors]
        order = {s.name: i for i, s in enumerate(self.specs)}
        return sorted(found, key=lambda p: order.get(p.field, -1))

    def unusual(self) -> list[Unusual]:
        """The values the form shows that are valid but far outside their usual range (none for text that is no
        value yet: that is a problem)."""
        values, errors = self._read()
        return [u for u in unusual_values(RunConfig(**values)) if u.field not in errors]

    def problems(self, world_size: int | None = None) -> list[ConfigError]:
        """Validate, show every problem under its field (from now on, as you type too), and return them."""
        if world_size is not None:
            self.world_size = world_size
        self.show_all = True
        found = self.check()
        self._warnings = {u.field: str(u) for u in self.unusual()}
        self.show_problems(found)
        return found

    def show_problems(self, problems: list[ConfigError]) -> None:
        shown = problems if self.show_all else [p for p in problems if self._relevant(p)]
        messages: dict[str, list[str]] = {}
        general = []
        for problem in shown:
            if problem.field in self._by_name:
                messages.setdefault(problem.field, []).append(str(problem))
            else:
                general.append(str(problem))
        self._messages = messages
        for spec in self.specs:
            self._render_note(spec)
        errors = self.query_one("#form-errors", Static)
        if general or errors.has_class("-shown"):
            errors.update(Content("\n".join(general)))
            errors.set_class(bool(general), "-shown")
        counts: dict[str, int] = {}
        for name in messages:
            group = self._by_name[name].group
            counts[group] = counts.get(group, 0) + len(messages[name])
        for collapsible in self.query(Collapsible):
            group = (collapsible.id or "").removeprefix("group-")
            n = counts.get(group, 0)
            title = GROUP_TITLES.get(group, group)
            collapsible.title = f"{title}  ({n} problem{'s' if n != 1 else ''})" if n else title

    def set_context(self, world_size: int, external: Sequence[ConfigError] = ()) -> None:
        """The training process count RunConfig checks against, and problems found outside the form
        (the placement's) to show under the fields they name; revalidates when either changed."""
        external = [p for p in external if p.field in self._by_name]
        same = [(p.field, str(p)) for p in external] == [(p.field, str(p)) for p in self.external]
        if world_size == self.world_size and same:
            return
        self.world_size = world_size
        self.external = external
        self.validate_now()

    def note(self, name: str) -> str:
        """The text shown under field ``name``'s help: its problems, the JSON status, or a warning."""
        return "\n".join(self._note_lines(self._by_name[name])[1])

    def _field_of(self, widget: Widget) -> str | None:
        """The field whose input ``widget`` is, or is inside (the Slurm fields' own inputs)."""
        for node in (widget, *widget.ancestors):
            if node is self:
                return None
            name = (node.id or "").removeprefix("field-")
            if node.id and node.id.startswith("field-") and name in self._by_name:
                return name
        return None

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """The focused field's name is marked, in the theme's primary colour: seen in every theme."""
        self.query(".field-name.-focused").remove_class("-focused")
        name = self._field_of(event.widget)
        if name is not None:
            self.query_one(f"#name-{name}", Label).add_class("-focused")

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        name = self._field_of(event.widget)
        if name is not None and self.app.focused is not event.widget:
            self.query_one(f"#name-{name}", Label).remove_class("-focused")

    def focus_field(self, name: str) -> bool:
        """Open the field's section and focus its input; False when the form has no such field."""
        if name not in self._by_name:
            return False
        widget = self.widget_for(name)
        for ancestor in widget.ancestors:
            if isinstance(ancestor, Collapsible):
                ancestor.collapsed = False
        self.call_after_refresh(widget.focus)
        return True

    def validate_now(self) -> list[ConfigError]:
        """Run the as-you-type validation at once instead of after the debounce delay."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        found = self.check()
        self._warnings = {u.field: str(u) for u in self.unusual()}
        self.show_problems(found)
        self.post_message(self.Changed(self))
        return found

    # -- internals --------------------------------------------------------------------------------------
    def _raw(self, spec: FieldSpec) -> Any:
        widget = self.widget_for(spec.name)
        if isinstance(widget, SlurmFields):  # its mapping as the JSON text the field's spec parses
            return spec.format(widget.settings)
        if isinstance(widget, TextArea):
            return widget.text
        if isinstance(widget, (Input, Select, Switch)):
            return widget.value
        raise TypeError(f"field {spec.name} has no input widget: {widget!r}")

    def _read(self) -> tuple[dict[str, Any], dict[str, ConfigError]]:
        values: dict[str, Any] = {}
        errors: dict[str, ConfigError] = {}
        for spec in self.specs:
            try:
                values[spec.name] = spec.parse(self._raw(spec))
            except ConfigError as exc:
                errors[spec.name] = exc
                # a stand-in, so RunConfig can still check every other field
                values[spec.name] = spec.default_value()
        return values, errors

    def _relevant(self, problem: ConfigError) -> bool:
        if problem.field in self.touched:
            return True
        names = self.touched | {self._by_name[n].flag for n in self.touched}
        return _mentions(str(problem), names)

    def _edits_json(self, spec: FieldSpec) -> bool:
        """The field is edited as JSON text (and says whether the text is valid JSON)."""
        return spec.is_json and spec.name != "slurm"

    def _update_json_status(self, spec: FieldSpec) -> None:
        text = self._raw(spec).strip()
        if not text:
            self._json_status[spec.name] = None
        else:
            try:
                spec.parse(text)
                self._json_status[spec.name] = (True, "valid JSON object")
            except ConfigError as exc:
                self._json_status[spec.name] = (False, str(exc))
        self._render_note(spec)

    def _note_lines(self, spec: FieldSpec) -> tuple[str, list[str]]:
        """(its colour: error, success or warning; lines) for the note under ``spec``'s input."""
        messages = list(self._messages.get(spec.name, []))
        status = self._json_status.get(spec.name)
        if status is not None:
            ok, text = status
            if not ok:
                return "error", [text, *(m for m in messages if m != text)]
            if not messages:
                return "success", [text]
        if messages:
            return "error", messages
        warning = self._warnings.get(spec.name)
        return ("warning", [warning]) if warning else ("success", [])

    def _render_note(self, spec: FieldSpec) -> None:
        """Show the field's help with its problems (or JSON status) under it."""
        if not self.is_mounted:
            return
        colour, lines = self._note_lines(spec)
        error, text = colour == "error", "\n".join(lines)
        # an update costs a layout of the whole form, so only changes are drawn
        if self._shown_notes.get(spec.name, ("success", "")) == (colour, text):
            return
        self._shown_notes[spec.name] = (colour, text)
        info = self.query_one(f"#info-{spec.name}", Static)
        parts: list = [self._help(spec)]
        if text:
            parts += ["\n", (text, f"${colour}")]
        info.update(Content.assemble(*parts))
        info.set_class(error, "-error")
        self.query_one(f"#name-{spec.name}").set_class(error, "-problem")
        widget = self.widget_for(spec.name)
        if isinstance(widget, SlurmFields):
            widget.mark(lines if error else [])

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(VALIDATE_DELAY, self.validate_now)

    def _changed(self, widget: Widget | None) -> None:
        name = (widget.id or "").removeprefix("field-") if widget is not None else ""
        spec = self._by_name.get(name)
        if spec is None:
            return
        if self._raw(spec) != self._baseline.get(name):
            self.touched.add(name)
        # the field's old message may no longer hold; the next validation says
        self._messages.pop(name, None)
        self._warnings.pop(name, None)
        if self._edits_json(spec):
            self._update_json_status(spec)
        else:
            self._render_note(spec)
        self._schedule()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._changed(event.input)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.screen.focus_next()

    def on_switch_changed(self, event: Switch.Changed) -> None:
        event.stop()
        self._changed(event.switch)

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        self._changed(event.select)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        self._changed(event.text_area)

    def on_slurm_fields_changed(self, event: SlurmFields.Changed) -> None:
        event.stop()
        self._changed(event.fields)


__all__ = ["ConfigForm"]
