"""GPU memory and utilisation from NVML; says plainly when the machine has no GPU."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from grpo_tui.services.machine.gpus import GPU

from ..safe_text import literal

GIB = 1 << 30


def gpu_table(gpus: list[GPU], where: str = "this machine") -> Table | Text:
    if not gpus:
        return literal(f"No NVIDIA GPU on {where} (or no driver): training runs on the CPU.")
    table = Table(box=None, pad_edge=False)
    for col in ("gpu", "name", "memory used / total", "free", "util"):
        table.add_column(col)
    for g in gpus:
        table.add_row(
            literal(g.index),
            literal(g.name),
            f"{g.memory_used / GIB:.1f} / {g.memory_total / GIB:.1f} GiB",
            f"{g.memory_free / GIB:.1f} GiB",
            f"{g.utilization}%",
        )
    return table


class GpuPanel(Static):
    DEFAULT_CSS = "GpuPanel { height: auto; padding: 0 1; }"

    def show(self, gpus: list[GPU], where: str = "this machine") -> None:
        self.update(gpu_table(gpus, where))
