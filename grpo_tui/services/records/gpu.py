"""A GPU as every part of the app knows it: NVML's reading here, a host's ``info --json`` and ``gpus`` message there.

One type, so a GPU listed on this machine (``services/machine/gpus.py``), sent by ``grpo-tui info --json`` or the
mirror stream (``{"gpus": [...]}``) and read back from a host is the same record, with no conversion between
look-alike classes; its wire table (``fields.wire``) is its encoder and its checked decoder.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpo_tui.services.records.fields import MAX_ITEMS, TEXT, WHOLE, Record, wire
from trainer_core.contract.run.json_values import whole


@dataclass(frozen=True)
class GPU(Record):
    """``index`` as NVML numbers it; memory in bytes; ``utilization`` in percent."""

    schema_name = "cli.gpu"

    index: int = wire(whole(0, MAX_ITEMS))
    name: str = wire(TEXT)
    memory_total: int = wire(WHOLE)
    memory_used: int = wire(WHOLE)
    utilization: int = wire(whole(0, 100))

    @property
    def memory_free(self) -> int:
        return self.memory_total - self.memory_used
