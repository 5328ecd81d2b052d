"""What ``grpo-tui info --json`` says of a machine: its grpo-tui, run format, runs folder, Python, GPUs and install.

An executor asks it before anything else (``executors/ssh.py``: both sides must speak one run format), and the
GPU picker of a launch on a host shows its GPUs. ``HostInfo`` is declared once with its wire table
(``fields.wire``), so the reply this machine prints and the one a host's reply is checked into are one record.
Whether the trainer can run here (``install``) is looked up without importing the training stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any

from grpo_tui.services.records.fields import TEXT_OR_NULL, Record, array_schema, items, schema_ref, wire
from grpo_tui.services.records.gpu import GPU
from trainer_core.contract.config.stack import TRAINING_STACK
from trainer_core.contract.run.json_values import Rule, whole

INSTALL_KINDS = ("light", "train")
TRAINER_MODULES = TRAINING_STACK
TRAIN_EXTRA = "pip install 'grpo-tui[train]'"


def missing_trainer() -> list[str]:
    """The trainer's packages this interpreter cannot import: looked up with ``find_spec``, never imported."""
    missing = []
    for module in TRAINER_MODULES:
        try:
            found = find_spec(module) is not None
        except (ImportError, ValueError):  # a broken install; a module whose __spec__ is gone
            found = False
        if not found:
            missing.append(module)
    return missing


def install_kind() -> str:
    """``train`` where this interpreter can run the trainer, else ``light`` (``pip install grpo-tui``: the app and
    the CLI, which watch, list, stop and export runs anywhere and launch on hosts that have the trainer)."""
    return "light" if missing_trainer() else "train"


def gpus_of(value: Any, where: str) -> tuple[GPU, ...]:
    """A list of GPUs (null: none), each checked (``gpus[0].index: expected …``)."""
    return tuple(GPU.from_wire(g, f"{where}[{i}]") for i, g in enumerate(items(value, where)))


def gpus_wire(gpus: tuple[GPU, ...]) -> list[dict]:
    return [g.to_wire() for g in gpus]


@dataclass(frozen=True)
class HostInfo(Record):
    """``info --json``: the host's grpo-tui version, the run format it writes, its runs folder and GPUs."""

    schema_name = "cli.info"

    version: str | None = wire(TEXT_OR_NULL)
    run_format: int = wire(whole(0, 1 << 31))
    hostname: str | None = wire(TEXT_OR_NULL)
    runs_dir: str | None = wire(TEXT_OR_NULL)
    python: str | None = wire(TEXT_OR_NULL)
    gpus: tuple[GPU, ...] = wire(load=gpus_of, dump=gpus_wire, schema=array_schema(schema_ref(GPU)))
    install: str | None = wire(
        Rule(lambda v: v in INSTALL_KINDS, "'light', 'train'", schema={"enum": list(INSTALL_KINDS)}).or_null(),
        factory=install_kind,
    )
    """``train`` (``grpo-tui[train]``: it can run the trainer) or ``light`` (the app and the CLI only); None from
    a grpo-tui older than the key. Made here (``LocalExecutor.info``), it is this interpreter's."""
