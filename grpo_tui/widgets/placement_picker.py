"""Where a new run trains: a picker of the machine's GPUs (free memory, utilisation) and the process count.

A widget of its own so the launch screen does not need to know how GPUs are shown or how the picker's
state becomes ``--gpus`` / ``--num-processes``. It posts ``PlacementPicker.Changed`` whenever the choice
changes; the screen asks it for the request and the plan. The plan is the contract's ``plan``, the one
``grpo-tui launch`` makes, so the picker cannot accept a placement the CLI would refuse. The GPUs are
given to it (probed by the screen), which keeps the widget free of NVML and easy to show with fake GPUs.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Label, SelectionList, Static
from textual.widgets.selection_list import Selection

from grpo_tui.services.machine.gpus import GPU
from trainer_core.contract.config.placement import Placement, plan
from trainer_core.contract.config.run_config import ConfigError, RunConfig

from ..safe_text import clean_line, literal
from .status_line import StatusLine

NO_GPU_TEXT = "No NVIDIA GPU on this machine: training runs on the CPU"
GIB = 1 << 30


def gpu_label(gpu: GPU) -> Text:
    """A GPU's line; the name is literal text, as another machine may have sent it."""
    return literal(
        f"GPU {gpu.index}  {clean_line(gpu.name)}  {gpu.memory_free / GIB:.1f} GiB free of "
        f"{gpu.memory_total / GIB:.0f} GiB  {gpu.utilization}% busy",
        end="",
    )


class PlacementPicker(Vertical):
    """The GPU list (all selected at first), a hint, the num-processes field and the plan's note."""

    DEFAULT_CSS = """
    PlacementPicker { height: auto; }
    PlacementPicker #gpu-list { height: auto; max-height: 10; }
    PlacementPicker .hint { color: $text-muted; }
    PlacementPicker #no-gpus { color: $warning; }
    PlacementPicker .row { height: auto; }
    PlacementPicker .row > Label { width: 30; padding-right: 1; text-style: bold; }
    PlacementPicker Input.-textual-compact { background: $boost; width: 1fr; }
    PlacementPicker Input.-textual-compact:focus { background-tint: $primary 25%; }
    """

    class Changed(Message):
        """The GPUs or the process count changed. ``gpus`` / ``num_processes`` as ``request()`` gives them
        (None: the CLI default), or ``error`` when the choice cannot be used as it stands."""

        def __init__(
            self,
            picker: PlacementPicker,
            gpus: list[int] | None,
            num_processes: int | None,
            error: ConfigError | None = None,
        ):
            super().__init__()
            self.picker = picker
            self.gpus = gpus
            self.num_processes = num_processes
            self.error = error

        @property
        def control(self) -> PlacementPicker:
            return self.picker

    def __init__(self, gpus: Sequence[GPU], *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.gpus = list(gpus)
        self.available = [g.index for g in self.gpus]

    def compose(self) -> ComposeResult:
        if self.gpus:
            yield SelectionList[int](*(Selection(gpu_label(g), g.index, True) for g in self.gpus), id="gpu-list")
            yield Static(
                "Selected GPUs train (and serve vLLM in server mode); all of them by default.",
                classes="hint",
                markup=False,
            )
        else:
            yield Static(NO_GPU_TEXT, id="no-gpus", markup=False)
        with Horizontal(classes="row"):
            yield Label("num processes")
            yield Input(
                type="integer",
                placeholder="default: one per training GPU, else 1",
                valid_empty=True,
                compact=True,
                id="num-processes",
            )
        yield StatusLine(id="placement-status")

    # -- what the user chose ---------------------------------------------------------------------------
    def request(self) -> tuple[list[int] | None, int | None]:
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

    def plan(self, config: RunConfig) -> Placement:
        """Where ``config`` runs with this choice, as ``grpo-tui launch`` would plan it; ConfigError if nowhere."""
        gpus, num_processes = self.request()
        return plan(config, self.available, gpus, num_processes)

    # -- what the screen says back ---------------------------------------------------------------------
    def show_plan(self, text: str, kind: str = "") -> None:
        """The note under the picker: the plan (``-info``), a problem (``-error``), or nothing."""
        self.query_one("#placement-status", StatusLine).show(text, kind)

    def focus_problem(self, field: str) -> None:
        """Focus the part of the picker a placement problem about ``field`` concerns."""
        self.query_one("#gpu-list" if field == "gpus" and self.gpus else "#num-processes").focus()

    # -- changes ---------------------------------------------------------------------------------------
    def _changed(self) -> None:
        try:
            gpus, num_processes = self.request()
        except ConfigError as exc:
            self.post_message(self.Changed(self, None, None, exc))
            return
        self.post_message(self.Changed(self, gpus, num_processes))

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged) -> None:
        event.stop()
        self._changed()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "num-processes":
            event.stop()
            self._changed()
