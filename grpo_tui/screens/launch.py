"""Configure and start a run: presets, the settings form, GPUs, config files, the command, Launch.

Launching here is ``grpo-tui launch`` without the typing: the same validation (RunConfig's messages,
shown under the fields they concern), the same placement check and the same detached start, after which
the run's monitor opens. The command preview is the exact command line that starts the same run from a
shell, so a setup found here can be scripted.

The screen only composes and routes: the widgets (form, preset and file bars, placement picker, command
preview) post what the user did, the screen turns that into form changes, file reads and writes, and the
reward-inspection gate; the blocking start runs in a named worker (``services.lifecycle.launching``) that reports
back through ``Launched`` / ``LaunchFailed`` messages.

A config with Slurm settings (the form's Slurm inputs, ``widgets/slurm_fields.py``) is submitted as a batch
job by the same executor call, as ``grpo-tui launch --slurm`` does; its placement is planned on the node's
GPUs (GPUs per node), not on the GPUs picked here.

With hosts configured, a host picker chooses where the run runs: the GPUs shown are then the host's, and
Launch goes through that host's executor, which has the host's grpo-tui check the config (a path in it is a
path there) before it starts the run there; its monitor then opens (``executors/ssh.py``). The
reward-inspection gate runs on this machine only, so a launch whose run's folder is not here goes without
it, and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, Footer, Label
from textual.worker import get_current_worker

from grpo_tui.services.lifecycle import tiny_model
from grpo_tui.services.lifecycle.launching import SKIPPED, LaunchError, gate_inspection
from grpo_tui.services.machine.gpus import GPU, list_gpus, visible_indices
from grpo_tui.services.records.wire import TRAIN_EXTRA, missing_trainer
from grpo_tui.services.serving.web_mode import control
from trainer_core.contract.config.model_source import model_problems
from trainer_core.contract.config.placement import Placement, plan
from trainer_core.contract.config.run_config import ConfigError, RunConfig

from ..executors.base import Executor, RunRef, place_args
from ..executors.hosts import LOCAL
from ..executors.registry import ExecutorRegistry
from ..presets import PRESETS, preset_values
from ..safe_text import literal
from ..widgets.command_preview import CommandPreview, launch_command
from ..widgets.config_actions import ConfigFileBar, PresetBar, save_config_file
from ..widgets.config_form import ConfigForm
from ..widgets.host_picker import HostPicker
from ..widgets.placement_picker import NO_GPU_TEXT, PlacementPicker, gpu_label
from ..widgets.status_line import StatusLine
from .confirm import ConfirmScreen
from .inspect import InspectScreen

if TYPE_CHECKING:
    from ..app import GrpoApp

__all__ = ["NO_GPU_TEXT", "LaunchScreen", "gpu_label"]


class LaunchScreen(Screen):
    BINDINGS = [
        Binding("ctrl+l", "launch", "Launch", priority=True),
        Binding("ctrl+s", "save", "Save config", priority=True),
        Binding("ctrl+o", "load", "Load config", priority=True),
        Binding("ctrl+g", "go_to_field", "Go to field", priority=True),
        Binding("escape", "back", "Back"),
    ]
    # the Input rules also style the form's fields (width 1fr in its grid), as they did before the split
    DEFAULT_CSS = """
    LaunchScreen #title { padding: 0 1; background: $panel; width: 100%; }
    LaunchScreen #body { height: 1fr; padding: 0 1; }
    LaunchScreen .section-title { text-style: bold; color: $primary; margin-top: 1; }
    LaunchScreen Input.-textual-compact { background: $boost; width: 1fr; }
    LaunchScreen Input.-textual-compact:focus { background-tint: $primary 25%; }
    LaunchScreen #actions { height: auto; max-height: 3; padding: 0 1; align-horizontal: right; }
    LaunchScreen #launch-status { width: 1fr; }
    LaunchScreen #placement-box { height: auto; }
    """

    class Launched(Message):
        """The run started on ``executor``: open its monitor."""

        def __init__(self, executor: Executor, run: RunRef):
            super().__init__()
            self.executor, self.run = executor, run

    class LaunchFailed(Message):
        """The run could not be created or started; ``field`` is the config field it concerns, if any."""

        def __init__(self, title: str, message: str, field: str | None = None):
            super().__init__()
            self.title, self.message, self.field = title, message, field

    class TinyModelBuilt(Message):
        """The demo's tiny model at ``path`` is current (``error`` None), or could not be built."""

        def __init__(self, path: Path, error: str | None):
            super().__init__()
            self.path, self.error = path, error

    def __init__(self, runs_dir, config: RunConfig | None = None, executors: ExecutorRegistry | None = None):
        super().__init__()
        self.runs_dir = Path(runs_dir)
        self.executors = executors if executors is not None else ExecutorRegistry(self.runs_dir, {})
        self.hosts = self.executors.hosts
        self.initial = config
        self.gpus: list[GPU] = []
        self.available: list[int] = []
        self.placement: Placement | None = None
        self.launching = False
        self._accepted_unusual: tuple = ()  # the unusual values the user chose to launch with
        self.building: Path | None = None  # the demo's tiny model while a worker builds it
        self.tiny_model_ready = False  # it was found current, or built, since this screen opened

    @property
    def form(self) -> ConfigForm:
        return self.query_one("#form", ConfigForm)

    @property
    def picker(self) -> PlacementPicker:
        return self.query_one(PlacementPicker)

    @property
    def host(self) -> str:
        return self.query_one(HostPicker).host if self.hosts else LOCAL

    @property
    def executor(self) -> Executor:
        """Where the run will run: the chosen host's executor, this machine's by default."""
        return self.executors.get(self.host)

    @property
    def grpo(self) -> GrpoApp:
        return cast("GrpoApp", self.app)

    @property
    def files(self) -> ConfigFileBar:
        return self.query_one(ConfigFileBar)

    @property
    def preview_text(self) -> str:
        """The command preview as shown: ``$ grpo-tui launch ...`` or ``no command yet: <why>``."""
        return self.query_one(CommandPreview).text

    # -- layout -----------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        gpus = list_gpus()
        visible = visible_indices(gpus)
        self.gpus = [g for g in gpus if g.index in visible]
        self.available = [g.index for g in self.gpus]
        yield Label(literal(f"new run in {self.runs_dir}"), id="title")
        with VerticalScroll(id="body"):
            yield Label("preset", classes="section-title")
            yield PresetBar()
            yield Label("settings", classes="section-title")
            yield ConfigForm(self.initial, id="form")
            if self.hosts:
                yield Label("host", classes="section-title")
                yield HostPicker(self.executors, id="host")
            yield Label("placement", classes="section-title")
            with Vertical(id="placement-box"):
                yield PlacementPicker(self.gpus)
            yield Label("config file", classes="section-title")
            yield ConfigFileBar()
        with Horizontal(id="actions"):
            yield StatusLine(id="launch-status")
            yield Button("Launch (ctrl+l)", variant="primary", compact=True, id="launch")
        yield CommandPreview(id="preview-box")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_preview()
        self.form.focus_field("model")

    # -- the command and the placement ------------------------------------------------------------------
    def placement_request(self, config: RunConfig | None = None) -> tuple[list[int] | None, int | None]:
        """(--gpus, --num-processes) as chosen; None means the CLI default. ConfigError when unusable. A Slurm
        job (``config`` has ``slurm`` settings) runs on its node's GPUs, not on those picked here."""
        gpus, num_processes = self.picker.request()
        return (None if config is not None and config.slurm else gpus), num_processes

    def plan(self, config: RunConfig) -> Placement:
        """Where ``config`` runs as chosen: here on the picked GPUs, or a Slurm job on its node's
        (``gpus_per_node``), as ``grpo-tui launch --slurm`` plans it. ConfigError if nowhere."""
        if not config.slurm:
            return self.picker.plan(config)
        gpus = config.slurm.get("gpus_per_node") if isinstance(config.slurm, dict) else None
        node = list(range(gpus)) if isinstance(gpus, int) and not isinstance(gpus, bool) and gpus > 0 else []
        return plan(config, node, None, self.placement_request(config)[1])

    def command(self, config: RunConfig | None = None) -> list[str]:
        """The ``grpo-tui launch`` command that starts this run (of ``config``, already read from the form);
        ConfigError when the form cannot say."""
        config = self.form.config() if config is None else config
        argv = launch_command(config, self.runs_dir, *self.placement_request(config))
        return [*argv[:-2], *place_args(self.executor)]  # where it runs: this runs dir, or the host's

    async def on_host_picker_chosen(self, message: HostPicker.Chosen) -> None:
        """Another host: its GPUs in the picker, its name in the title and the command."""
        if message.host != self.host:
            return
        self.gpus, self.available = message.gpus, [g.index for g in message.gpus]
        box = self.query_one("#placement-box", Vertical)
        await box.remove_children()
        await box.mount(PlacementPicker(self.gpus))
        host = self.executors.get(message.host).host_name
        where = f"on {host}" if host else f"in {self.runs_dir}"
        self.query_one("#title", Label).update(literal(f"new run {where}"))
        self.refresh_preview()
        if message.error:
            self.picker.show_plan(message.error, "-error")
            self._launch_status.show(message.error, "-error")

    def refresh_preview(self) -> None:
        preview = self.query_one(CommandPreview)
        config = None
        try:
            config = self.form.config()
            preview.show_command(self.command(config))
        except ConfigError as exc:
            preview.show_problem(exc)
        self._check_placement(config)

    def _check_placement(self, config: RunConfig | None) -> None:
        """Plan where ``config`` (None: the form does not make one) would run, and say so under the GPUs."""
        self.placement = None
        if config is None:
            self.picker.show_plan("", "")
            return
        try:
            self.placement = self.plan(config)
        except ConfigError as exc:
            # problems with a form field (vllm_server_gpus, ...) show under that field instead
            self.picker.show_plan("" if self.form.has_field(exc.field) else str(exc), "-error")
            self.form.set_context(self.form.world_size, [exc, *self._model_problems(config)])
            return
        notes = list(self.placement.notes)
        if self.placement.train_gpus:
            notes.insert(
                0,
                f"{self.placement.num_processes} training process(es) on GPU(s) "
                f"{','.join(map(str, self.placement.train_gpus))}",
            )
        if config.slurm:
            notes.insert(0, "a Slurm batch job: it runs on the node Slurm gives it (its GPUs: GPUs per node)")
        self.picker.show_plan("; ".join(notes), "-info")
        self.form.set_context(self.placement.num_processes, self._model_problems(config))

    def _model_problems(self, config: RunConfig) -> list[ConfigError]:
        """Whether the model loads where the run runs (config/model_source.py): checked here for this machine's
        runs and its Slurm jobs; a host's grpo-tui checks its own paths and cache when it launches there."""
        if config.model == str(tiny_model.tiny_model_dir()) and not self.tiny_model_ready:
            return []  # the CPU demo preset's model: built when the run is launched
        return model_problems(config.model) if self.executor.folders_here else []

    def on_config_form_changed(self, event: ConfigForm.Changed) -> None:
        self.refresh_preview()

    def on_placement_picker_changed(self, event: PlacementPicker.Changed) -> None:
        self.refresh_preview()

    # -- presets ----------------------------------------------------------------------------------------
    def on_preset_bar_chosen(self, event: PresetBar.Chosen) -> None:
        self.apply_preset(event.name)

    def apply_preset(self, name: str) -> None:
        """Fill the fields preset ``name`` sets; the other fields keep what they show."""
        bar = self.query_one(PresetBar)
        try:
            self.form.set_values(preset_values(name))
        except ConfigError as exc:
            bar.describe(str(exc))
            return
        bar.describe(f"applied {name!r}: {PRESETS[name].description}")

    # -- the demo's tiny model: the CPU demo preset's, built on its first launch -------------------------------
    def _tiny_model_pending(self, config: RunConfig) -> bool:
        """Whether this launch waits for the demo's tiny model (``config``'s model): built (or found current) in a
        worker first, after which the launch goes on by itself."""
        path = tiny_model.tiny_model_dir()
        if config.model != str(path) or self.tiny_model_ready or not self.executor.folders_here or missing_trainer():
            return False
        if self.building is None:
            self.building = path
            self._launch_status.show(
                f"the demo's tiny model first, in {path} (built once: minutes on a CPU) ...", "-info"
            )
            self.build_tiny_model(path)
        return True

    @work(thread=True, exclusive=True, exit_on_error=False, group="tiny-model")
    def build_tiny_model(self, path: Path) -> None:
        """Build the demo's tiny model in a child process unless it is current (the child says); stopped with
        the screen."""
        worker = get_current_worker()
        try:
            tiny_model.ensure(cancelled=lambda: worker.is_cancelled)
        except (OSError, tiny_model.BuildFailed) as exc:
            self.post_message(self.TinyModelBuilt(path, str(exc)))
        else:
            self.post_message(self.TinyModelBuilt(path, None))

    def on_launch_screen_tiny_model_built(self, message: TinyModelBuilt) -> None:
        self.building = None
        self.tiny_model_ready = message.error is None
        if message.error is not None:
            self._launch_status.show(message.error, "-error")
            return
        self._launch_status.show(f"the demo's tiny model is ready in {message.path}", "-ok")
        self.refresh_preview()  # the model field is checked again, now that the folder is there
        self.action_launch()

    # -- config files -----------------------------------------------------------------------------------
    def action_go_to_field(self) -> None:
        """A palette of the form's fields: type part of a name, Enter opens its group and focuses it."""
        from textual.command import CommandPalette

        from ..widgets.field_jump import FieldCommands

        self.app.push_screen(CommandPalette(providers=[FieldCommands], placeholder="Go to field…"))

    def action_load(self) -> None:
        self.files.request_load()

    def action_save(self) -> None:
        self.files.request_save()

    def on_config_file_bar_load(self, event: ConfigFileBar.Load) -> None:
        try:
            config = RunConfig.load(event.path)
        except ConfigError as exc:
            self.files.report(str(exc), "-error")
            return
        self.form.load(config)
        self.files.report(f"loaded {event.path}", "-ok")

    def on_config_file_bar_save(self, event: ConfigFileBar.Save) -> None:
        path = event.path
        try:
            config = self.form.config()
        except ConfigError as exc:
            self.files.report(f"cannot save: {exc}", "-error")
            self.form.focus_field(exc.field)
            return
        if path.exists():

            def confirmed(ok: bool | None) -> None:
                if ok:
                    self._write(config, path)

            self.app.push_screen(
                ConfirmScreen(f"Overwrite {path}?", "The file is replaced by the settings shown."), confirmed
            )
        else:
            self._write(config, path)

    def _write(self, config: RunConfig, path: Path) -> None:
        try:
            said = save_config_file(config, path)  # notify URLs masked, atomically (widgets/config_actions.py)
        except OSError as exc:
            self.files.report(f"cannot save {path}: {exc.strerror or exc}", "-error")
            return
        self.files.report(said, "-ok")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "launch":
            self.action_launch()

    # -- launch -----------------------------------------------------------------------------------------
    def action_back(self) -> None:
        self.dismiss()

    @property
    def _launch_status(self) -> StatusLine:
        return self.query_one("#launch-status", StatusLine)

    @control
    def action_launch(self) -> None:
        """Validate everything the CLI would, show what is wrong where it is, else open the inspection gate."""
        if self.launching:
            return
        try:
            config = self.form.config()
        except ConfigError:
            self._refuse(self.form.problems())
            return
        if self._tiny_model_pending(config):
            return
        try:
            placement = self.plan(config)
        except ConfigError as exc:
            self._check_placement(config)
            if self.form.has_field(exc.field):
                self._refuse(self.form.problems())
            else:
                self._launch_status.show(f"cannot launch: {exc}", "-error")
                self.picker.focus_problem(exc.field)
            return
        self.form.external = self._model_problems(config)
        problems = self.form.problems(world_size=placement.num_processes)
        if problems:
            self._refuse(problems)
            return
        if not self._unusual_accepted():
            return
        gpus, num_processes = self.placement_request(config)
        executor = self.executor
        missing = missing_trainer() if executor.folders_here else []
        if missing:  # a light install: its runs (and the inspection gate) would fail in their logs
            self._launch_status.show(
                f"cannot launch here: this install lacks the trainer (no {', '.join(missing)}): {TRAIN_EXTRA}, or "
                "pick a host whose grpo-tui has it",
                "-error",
            )
            return
        self._set_launching(True)
        if not executor.folders_here:
            config.inspection = SKIPPED
            self._launch_status.show(
                f"checking the config on {executor.name}, then starting it there (the reward "
                f"inspection gate runs here only: `grpo-tui inspect --host {executor.name}`)",
                "-info",
            )
            self.start_run(executor, config, gpus, num_processes)
            return
        self._launch_status.show("reward inspection first: read the scored samples, then launch", "-info")

        def after_gate(result) -> None:
            self._after_gate(result, executor, config, gpus, num_processes)

        self.app.push_screen(InspectScreen(config, self.runs_dir), after_gate)

    def _unusual_accepted(self) -> bool:
        """Whether no value is far outside its usual range (an lr of 4.0), or the user said yes to these; else ask,
        and a yes launches again."""
        unusual = self.form.unusual()
        key = tuple((u.field, u.value) for u in unusual)
        if not unusual or key == self._accepted_unusual:
            return True

        def answered(ok: bool | None) -> None:
            if ok:
                self._accepted_unusual = key
                self.action_launch()
            else:
                self.form.focus_field(unusual[0].field)

        self._launch_status.show(f"not launched yet: {unusual[0]}", "-info")
        question = "Launch with a setting far outside its usual range?"
        self.app.push_screen(ConfirmScreen(question, "\n".join(map(str, unusual))), answered)
        return False

    def _after_gate(
        self, result, executor: Executor, config: RunConfig, gpus: list[int] | None, num_processes: int | None
    ) -> None:
        """The inspection gate answered: launch with its id, launch recorded as skipped, or back to the form."""
        if result is None:
            self._set_launching(False)
            self._launch_status.show("not launched: the reward inspection was not completed", "-info")
            return
        config.inspection = gate_inspection(result)
        self._launch_status.show("starting the run…", "-info")
        self.start_run(executor, config, gpus, num_processes)

    def _refuse(self, problems: list[ConfigError]) -> None:
        if not problems:
            return
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        self._launch_status.show(f"cannot launch: {first}{more}", "-error")
        self.form.focus_field(first.field)

    def _set_launching(self, launching: bool) -> None:
        self.launching = launching
        self.query_one("#launch", Button).disabled = launching

    @work(thread=True, exclusive=True, exit_on_error=False, group="launch")
    def start_run(
        self, executor: Executor, config: RunConfig, gpus: list[int] | None, num_processes: int | None
    ) -> None:
        """Create and start the run there (blocking), then say how it went through a message."""
        try:
            launched = executor.launch(config, gpus, num_processes)
        except LaunchError as exc:
            self.post_message(self.LaunchFailed(exc.title, exc.message, exc.field))
            return
        if not self.post_message(self.Launched(executor, launched)):
            # this screen was closed while the run started; the run is running all the same, so show it
            self.app.call_from_thread(self.grpo.open_run, executor, launched)

    def on_launch_screen_launched(self, message: Launched) -> None:
        self.launching = False
        if self.is_current:
            self.dismiss()
        self.grpo.open_run(message.executor, message.run)

    def on_launch_screen_launch_failed(self, message: LaunchFailed) -> None:
        self._set_launching(False)
        self._launch_status.show(f"{message.title}: {message.message}", "-error")
        if message.field:
            self.form.focus_field(message.field)
