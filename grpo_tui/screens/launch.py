"""Configure and start a run: the settings form, presets, GPUs, config files, the command, Launch.

Launching here is ``grpo-tui launch`` without the typing: the same validation (RunConfig's messages,
shown under the fields they concern), the same placement check and the same detached start, after which
the run's monitor opens. The command preview is the exact command line that starts the same run from a
shell, so a setup found here can be scripted.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Button, Footer, Input, Label, Select, SelectionList, Static
from textual.widgets.selection_list import Selection
from textual.worker import Worker, WorkerState

from trainer_core.contract.cli_args import config_to_argv
from trainer_core.contract.config import ConfigError, RunConfig
from trainer_core.contract.placement import Placement, plan

from ..presets import PRESETS, preset_values
from ..services import inspections
from ..services.gpus import GPU, list_gpus, visible_indices
from ..widgets.config_form import ConfigForm
from .confirm import ConfirmScreen
from .inspect import InspectScreen

NO_GPU_TEXT = "No NVIDIA GPU on this machine: training runs on the CPU"
GIB = 1 << 30


def gpu_label(gpu: GPU) -> str:
    return (f"GPU {gpu.index}  {gpu.name}  {gpu.memory_free / GIB:.1f} GiB free of {gpu.memory_total / GIB:.0f} GiB"
            f"  {gpu.utilization}% busy")


class LaunchScreen(Screen):
    BINDINGS = [
        Binding("ctrl+l", "launch", "Launch", priority=True),
        Binding("ctrl+s", "save", "Save config", priority=True),
        Binding("ctrl+o", "load", "Load config", priority=True),
        Binding("escape", "back", "Back"),
    ]
    DEFAULT_CSS = """
    LaunchScreen #title { padding: 0 1; background: $panel; width: 100%; }
    LaunchScreen #body { height: 1fr; padding: 0 1; }
    LaunchScreen .section-title { text-style: bold; color: $primary; margin-top: 1; }
    LaunchScreen .row { height: auto; }
    LaunchScreen .row > Label { width: 30; padding-right: 1; text-style: bold; }
    LaunchScreen #preset { width: 1fr; }
    LaunchScreen #preset-description, LaunchScreen .hint { color: $text-muted; }
    LaunchScreen #gpu-list { height: auto; max-height: 10; }
    LaunchScreen #no-gpus { color: $warning; }
    LaunchScreen Input.-textual-compact { background: $boost; width: 1fr; }
    LaunchScreen Input.-textual-compact:focus { background-tint: $primary 25%; }
    LaunchScreen #files Button { margin-left: 1; }
    LaunchScreen .status { display: none; }
    LaunchScreen .status.-error { display: block; color: $error; }
    LaunchScreen .status.-ok { display: block; color: $success; }
    LaunchScreen .status.-info { display: block; color: $text-muted; }
    LaunchScreen #preview-box { height: auto; max-height: 5; background: $panel; padding: 0 1; }
    LaunchScreen #preview.-error { color: $warning; }
    LaunchScreen #actions { height: auto; max-height: 3; padding: 0 1; align-horizontal: right; }
    LaunchScreen #launch-status { width: 1fr; }
    """

    def __init__(self, runs_dir, config: RunConfig | None = None):
        super().__init__()
        self.runs_dir = Path(runs_dir)
        self.initial = config
        self.gpus: list[GPU] = []
        self.available: list[int] = []
        self.placement: Placement | None = None
        self.launching = False
        self.preview_text = ""

    @property
    def form(self) -> ConfigForm:
        return self.query_one("#form", ConfigForm)

    # -- layout -----------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        gpus = list_gpus()
        visible = visible_indices(gpus)
        self.gpus = [g for g in gpus if g.index in visible]
        self.available = [g.index for g in self.gpus]
        yield Label(Content(f"new run in {self.runs_dir}"), id="title")
        with VerticalScroll(id="body"):
            yield Label("preset", classes="section-title")
            with Horizontal(classes="row"):
                yield Label("start from")
                yield Select([(name, name) for name in PRESETS], prompt="choose a preset (fills the fields it names)",
                             compact=True, id="preset")
            yield Static(id="preset-description", markup=False)
            yield Label("settings", classes="section-title")
            yield ConfigForm(self.initial, id="form")
            yield Label("placement", classes="section-title")
            if self.gpus:
                yield SelectionList[int](*(Selection(gpu_label(g), g.index, True) for g in self.gpus), id="gpu-list")
                yield Static("Selected GPUs train (and serve vLLM in server mode); all of them by default.",
                             classes="hint", markup=False)
            else:
                yield Static(NO_GPU_TEXT, id="no-gpus", markup=False)
            with Horizontal(classes="row"):
                yield Label("num processes")
                yield Input(type="integer", placeholder="default: one per training GPU, else 1", valid_empty=True,
                            compact=True, id="num-processes")
            yield Static(id="placement-status", classes="status", markup=False)
            yield Label("config file", classes="section-title")
            with Horizontal(classes="row", id="files"):
                yield Input(placeholder="path of a .yaml or .json config", compact=True, id="config-path")
                yield Button("Load (ctrl+o)", compact=True, id="load")
                yield Button("Save (ctrl+s)", compact=True, id="save")
            yield Static(id="file-status", classes="status", markup=False)
        with Horizontal(id="actions"):
            yield Static(id="launch-status", classes="status", markup=False)
            yield Button("Launch (ctrl+l)", variant="primary", compact=True, id="launch")
        with VerticalScroll(id="preview-box"):
            yield Static(id="preview", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_preview()
        self.form.focus_field("model")

    # -- the command and the placement ------------------------------------------------------------------
    def placement_request(self) -> tuple[list[int] | None, int | None]:
        """(--gpus, --num-processes) as chosen; None means the CLI default. ConfigError when unusable."""
        text = self.query_one("#num-processes", Input).value.strip()
        try:
            num_processes = int(text) if text else None
        except ValueError:
            raise ConfigError("num_processes", f"num processes must be a whole number, got {text!r}.") from None
        if not self.gpus:
            return None, num_processes
        selected = sorted(self.query_one("#gpu-list", SelectionList).selected)
        if not selected:
            raise ConfigError("gpus", "Select at least one GPU for the run.")
        return (None if selected == sorted(self.available) else selected), num_processes

    def plan_placement(self, config: RunConfig) -> Placement:
        gpus, num_processes = self.placement_request()
        return plan(config, self.available, gpus, num_processes)

    def command(self, config: RunConfig | None = None) -> list[str]:
        """The ``grpo-tui launch`` command that starts this run (of ``config``, already read from the form);
        ConfigError when the form cannot say."""
        config = self.form.config() if config is None else config
        gpus, num_processes = self.placement_request()
        argv = ["grpo-tui", "launch", *config_to_argv(config)]
        if gpus is not None:
            argv += ["--gpus", ",".join(map(str, gpus))]
        if num_processes is not None:
            argv += ["--num-processes", str(num_processes)]
        return argv + ["--runs-dir", str(self.runs_dir)]

    def refresh_preview(self) -> None:
        preview = self.query_one("#preview", Static)
        config = None
        try:
            config = self.form.config()
            text = "$ " + shlex.join(self.command(config))
            error = False
        except ConfigError as exc:
            text = f"no command yet: {exc}"
            error = True
        if text != self.preview_text:
            self.preview_text = text
            preview.update(Content(text))
            preview.set_class(error, "-error")
        self._check_placement(config)

    def _check_placement(self, config: RunConfig | None) -> None:
        """Plan where ``config`` (None: the form does not make one) would run, and say so under the GPUs."""
        status = self.query_one("#placement-status", Static)
        self.placement = None
        if config is None:
            self._status(status, "", "")
            return
        try:
            self.placement = self.plan_placement(config)
        except ConfigError as exc:
            # problems with a form field (vllm_server_gpus, ...) show under that field instead
            self._status(status, "" if self.form.has_field(exc.field) else str(exc), "-error")
            self.form.set_context(self.form.world_size, [exc])
            return
        notes = list(self.placement.notes)
        if self.placement.train_gpus:
            notes.insert(0, f"{self.placement.num_processes} training process(es) on GPU(s) "
                            f"{','.join(map(str, self.placement.train_gpus))}")
        self._status(status, "; ".join(notes), "-info")
        self.form.set_context(self.placement.num_processes)

    @staticmethod
    def _status(widget: Static, text: str, kind: str) -> None:
        if str(widget.visual) == text and (not text or widget.has_class(kind)):
            return
        widget.update(Content(text))
        for cls in ("-error", "-ok", "-info"):
            widget.set_class(bool(text) and cls == kind, cls)

    def on_config_form_changed(self, event: ConfigForm.Changed) -> None:
        self.refresh_preview()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "num-processes":
            self.refresh_preview()

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged) -> None:
        self.refresh_preview()

    # -- presets ----------------------------------------------------------------------------------------
    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "preset" or event.value is Select.BLANK:
            return
        self.apply_preset(str(event.value))
        # back to the prompt, so the same preset can be applied again after edits
        with event.select.prevent(Select.Changed):
            event.select.clear()

    def apply_preset(self, name: str) -> None:
        """Fill the fields preset ``name`` sets; the other fields keep what they show."""
        description = self.query_one("#preset-description", Static)
        try:
            self.form.set_values(preset_values(name))
        except ConfigError as exc:
            description.update(Content(str(exc)))
            return
        description.update(Content(f"applied {name!r}: {PRESETS[name].description}"))

    # -- config files -----------------------------------------------------------------------------------
    def _path(self) -> Path | None:
        text = self.query_one("#config-path", Input).value.strip()
        if not text:
            self._status(self.query_one("#file-status", Static), "Enter the path of a YAML or JSON config file first.",
                         "-error")
            self.query_one("#config-path", Input).focus()
            return None
        return Path(text).expanduser()

    def action_load(self) -> None:
        path = self._path()
        if path is None:
            return
        status = self.query_one("#file-status", Static)
        try:
            config = RunConfig.load(path)
        except ConfigError as exc:
            self._status(status, str(exc), "-error")
            return
        self.form.load(config)
        self._status(status, f"loaded {path}", "-ok")

    def action_save(self) -> None:
        path = self._path()
        if path is None:
            return
        status = self.query_one("#file-status", Static)
        try:
            config = self.form.config()
        except ConfigError as exc:
            self._status(status, f"cannot save: {exc}", "-error")
            self.form.focus_field(exc.field)
            return
        if path.exists():
            self.app.push_screen(ConfirmScreen(f"Overwrite {path}?", "The file is replaced by the settings shown."),
                                 lambda ok: ok and self._write(config, path))
        else:
            self._write(config, path)

    def _write(self, config: RunConfig, path: Path) -> None:
        status = self.query_one("#file-status", Static)
        try:
            config.save(path)
        except OSError as exc:
            self._status(status, f"cannot save {path}: {exc.strerror or exc}", "-error")
            return
        self._status(status, f"saved {path}", "-ok")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        actions = {"launch": self.action_launch, "load": self.action_load, "save": self.action_save}
        action = actions.get(event.button.id or "")
        if action:
            action()

    # -- launch -----------------------------------------------------------------------------------------
    def action_back(self) -> None:
        self.dismiss()

    def action_launch(self) -> None:
        """Validate everything the CLI would, show what is wrong where it is, else start the run."""
        if self.launching:
            return
        status = self.query_one("#launch-status", Static)
        try:
            config = self.form.config()
        except ConfigError:
            self._refuse(status, self.form.problems())
            return
        try:
            placement = self.plan_placement(config)
        except ConfigError as exc:
            self._check_placement(config)
            if self.form.has_field(exc.field):
                self._refuse(status, self.form.problems())
            else:
                self._status(status, f"cannot launch: {exc}", "-error")
                self.query_one("#gpu-list" if exc.field == "gpus" and self.gpus else "#num-processes").focus()
            return
        self.form.external = []
        problems = self.form.problems(world_size=placement.num_processes)
        if problems:
            self._refuse(status, problems)
            return
        gpus, num_processes = self.placement_request()
        self.launching = True
        self.query_one("#launch", Button).disabled = True
        self._status(status, "reward inspection first: read the scored samples, then launch", "-info")
        self.app.push_screen(InspectScreen(config, self.runs_dir),
                             lambda result: self._after_gate(result, config, gpus, num_processes))

    def _after_gate(self, result, config: RunConfig, gpus: list[int] | None, num_processes: int | None) -> None:
        """The inspection gate answered: launch with its id, launch recorded as skipped, or back to the form."""
        status = self.query_one("#launch-status", Static)
        if result is None:
            self.launching = False
            self.query_one("#launch", Button).disabled = False
            self._status(status, "not launched: the reward inspection was not completed", "-info")
            return
        kind, inspection_id = result
        config.inspection = inspection_id if kind == "launch" else "skipped"
        self._status(status, "starting the run…", "-info")
        self.start_run(config, gpus, num_processes)

    def _refuse(self, status: Static, problems: list[ConfigError]) -> None:
        if not problems:
            return
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        self._status(status, f"cannot launch: {first}{more}", "-error")
        self.form.focus_field(first.field)

    @work(thread=True, exclusive=True, exit_on_error=False, group="launch")
    def start_run(self, config: RunConfig, gpus: list[int] | None, num_processes: int | None) -> None:
        from ..services.supervisor import LaunchOptions, create_run, start_root

        folder, placement = create_run(config, self.runs_dir, gpus=gpus, num_processes=num_processes)
        if config.inspection and config.inspection != "skipped":
            inspections.attach(inspections.Inspection(inspections.inspections_dir(self.runs_dir) / config.inspection), folder)
        try:
            start_root(folder, placement, LaunchOptions())
        except Exception as exc:
            folder.write_state(status="failed", exit_reason=f"could not start the run: {exc}",
                               ended=round(time.time(), 3))
            raise
        self.app.call_from_thread(self._launched, folder.path)

    def _launched(self, path: Path) -> None:
        self.launching = False
        if self.is_current:
            self.dismiss()
        self.app.open_monitor(path)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "launch" or event.state != WorkerState.ERROR:
            return
        self.launching = False
        self.query_one("#launch", Button).disabled = False
        error = event.worker.error
        message = str(error) if isinstance(error, ConfigError) else getattr(error, "strerror", None) or str(error)
        self._status(self.query_one("#launch-status", Static), f"launch failed: {message}", "-error")
        if isinstance(error, ConfigError):
            self.form.focus_field(error.field)
