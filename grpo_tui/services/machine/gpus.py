"""The machine's GPUs, as NVML reports them: index, name, memory, utilisation.

Used to check ``--gpus`` before a run starts and to show the GPU picker and panel. On a machine without
NVIDIA GPUs (or without the driver) the list is empty, and callers say so plainly. ``GRPO_TUI_FAKE_GPUS``
(a JSON list of GPU objects, or a count) stands in for NVML where no GPU can exist, behind the same
``list_gpus()`` interface. A GPU is ``records.gpu.GPU``, the record ``info --json`` and the mirror stream send.
"""

from __future__ import annotations

import json
import os
from typing import Any

from grpo_tui.services.records.gpu import GPU as GPU  # the one GPU type (records/gpu.py); imported from here too
from trainer_core.contract.run.json_values import is_whole

FAKE_ENV = "GRPO_TUI_FAKE_GPUS"


def _fake(spec: str) -> list[GPU]:
    data: Any = json.loads(spec)
    if is_whole(data):
        data = [{"index": i} for i in range(data)]
    gib = 1 << 30
    return [
        GPU(
            index=d.get("index", i),
            name=d.get("name", "Fake GPU"),
            memory_total=d.get("memory_total", 80 * gib),
            memory_used=d.get("memory_used", 0),
            utilization=d.get("utilization", 0),
        )
        for i, d in enumerate(data)
    ]


def list_gpus() -> list[GPU]:
    spec = os.environ.get(FAKE_ENV)
    if spec:
        return _fake(spec)
    try:
        import pynvml
    except ImportError:
        return []
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError_LibraryNotFound, NVMLError_DriverNotLoaded, ...
        return []
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            name = pynvml.nvmlDeviceGetName(handle)
            util = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
            gpus.append(
                GPU(
                    i,
                    name.decode() if isinstance(name, bytes) else name,
                    int(memory.total),
                    int(memory.used),
                    int(util),
                )
            )
        return gpus
    finally:
        pynvml.nvmlShutdown()


def visible_indices(gpus: list[GPU] | None = None) -> list[int]:
    """GPU indices the run may use: NVML's (or those of ``gpus``, already listed), narrowed by
    CUDA_VISIBLE_DEVICES when it lists indices."""
    indices = [g.index for g in (list_gpus() if gpus is None else gpus)]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None or os.environ.get(FAKE_ENV):
        return indices
    try:
        allowed = [int(v) for v in visible.split(",") if v.strip()]
    except ValueError:
        return indices
    return [i for i in indices if i in allowed]
