"""The hardware pre-flight on the launching side: what the run's machine has, and the verdict on a config.

``check`` is what ``train``, ``launch`` (and its ``--dry-run``, which ``--host`` and the app run on the host),
``inspect`` and the app's Launch call before they create anything: it plans the placement as the launch
would (a ``--gpus`` that names a GPU the machine lacks is one of the problems), describes the training GPUs
(``machine_for``: NVML's names and compute capabilities, or ``GRPO_TUI_FAKE_GPUS``'s ``compute_capability``),
and runs ``trainer_core.contract.config.hardware.preflight``. With ``on_missing: fallback`` it applies the
fallbacks to the config, so the config.yaml written next is the one that runs; ``record`` then leaves them in
state.json for the trainer's ``hardware_fallback`` warning. A Slurm job's node is not this machine: its
packages are this interpreter's (the job runs it), its GPUs are known only as a count, so the checks that need
them are left to the trainer at start (``deferred``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from grpo_tui.services.machine.gpus import FAKE_ENV, list_gpus, visible_indices
from trainer_core.contract.config.hardware import (
    STATE_KEY,
    Gpu,
    HardwareProblem,
    Machine,
    PreflightError,
    apply_fallbacks,
    fallback_note,
    preflight,
)
from trainer_core.contract.config.placement import Placement, plan
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.json_values import is_number, is_whole


def _capability(value) -> tuple[int, int] | None:
    """``8.0``, ``"8.6"`` or ``[8, 6]`` as (8, 6); None for anything else."""
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(is_whole(v) for v in value):
        return int(value[0]), int(value[1])
    if is_number(value) or isinstance(value, str):
        major, _, minor = str(value).partition(".")
        if major.isdigit() and (minor or "0").isdigit():
            return int(major), int(minor or 0)
    return None


def capabilities() -> dict[int, tuple[int, int]]:
    """Each GPU's CUDA compute capability by index: NVML's, or the fake GPUs' ``compute_capability``."""
    spec = os.environ.get(FAKE_ENV)
    if spec:
        try:
            data = json.loads(spec)
        except ValueError:
            return {}
        if not isinstance(data, list):
            return {}
        found = {}
        for i, gpu in enumerate(data):
            if isinstance(gpu, dict) and _capability(gpu.get("compute_capability")) is not None:
                found[gpu.get("index", i)] = _capability(gpu.get("compute_capability"))
        return {k: v for k, v in found.items() if is_whole(k, None) and v is not None}
    try:
        import pynvml
    except ImportError:
        return {}
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver, no library
        return {}
    try:
        found = {}
        for i in range(pynvml.nvmlDeviceGetCount()):
            try:
                major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(pynvml.nvmlDeviceGetHandleByIndex(i))
                found[i] = (int(major), int(minor))
            except Exception:
                continue
        return found
    finally:
        pynvml.nvmlShutdown()


def here() -> str:
    return f"this machine ({os.uname().nodename})"


def machine_for(config: RunConfig, placement: Placement | None, slurm: bool = False) -> Machine:
    """The machine the run's training processes will have, as this one can know it (``slurm``: a node of the
    job its Slurm settings ask for)."""
    if slurm:
        per_node = config.slurm.get("gpus_per_node") if isinstance(config.slurm, dict) else None
        if is_whole(per_node, 1):
            gpus = placement.train_gpus if placement is not None else list(range(per_node))
            return Machine("the Slurm job's node", tuple(Gpu(i) for i in gpus))
        return Machine("the Slurm job's node", gpus_known=False)
    if placement is None:  # the placement itself was refused: judge the packages only
        return Machine(here(), gpus_known=False)
    names = {g.index: g.name for g in list_gpus()} if placement.train_gpus else {}
    caps = capabilities() if placement.train_gpus else {}
    return Machine(here(), tuple(Gpu(i, names.get(i, "GPU"), caps.get(i)) for i in placement.train_gpus))


@dataclass
class Verdict:
    """``check``'s answer: what stops the launch, the fallbacks it applied, what the trainer judges at start."""

    placement: Placement | None = None
    problems: list[ConfigError] = field(default_factory=list)
    applied: list[HardwareProblem] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    machine: Machine | None = None

    def raise_problems(self) -> None:
        if self.problems:
            raise PreflightError(self.problems)

    def notes(self) -> list[str]:
        """What a launch that goes ahead says about the hardware: each fallback, and what is left to the trainer."""
        lines = [f"fallback: {fallback_note(p)}" for p in self.applied]
        if self.deferred and self.machine is not None:
            lines.append(
                f"the GPUs of {self.machine.where} are not known here: {', '.join(self.deferred)} "
                "will be checked by the trainer when it starts there"
            )
        return lines


def check(
    config: RunConfig,
    *,
    gpus: list[int] | None = None,
    num_processes: int | None = None,
    available: list[int] | None = None,
    world_size=None,
    here: bool = False,
) -> Verdict:
    """The pre-flight of ``config`` on the machine it would run on (``available``: that machine's GPUs, when it
    is not this one; ``here``: this machine even for a config with Slurm settings, as for an inspection).
    Applies the fallbacks when ``config.on_missing`` is fallback. A config with other problems gets only the
    placement's: its own errors come from ``RunConfig.validate`` as before. ``world_size(config, placement)``:
    the process count the config is validated against."""
    verdict = Verdict()
    try:
        verdict.placement = plan(config, visible_indices() if available is None else available, gpus, num_processes)
    except ConfigError as exc:
        verdict.problems.append(exc)
    size = verdict.placement.num_processes if verdict.placement else 1
    if world_size is not None and verdict.placement is not None:
        size = world_size(config, verdict.placement)
    if config.problems(world_size=size):
        return verdict
    verdict.machine = machine_for(config, verdict.placement, slurm=bool(config.slurm) and not here)
    found = preflight(config, verdict.machine)
    verdict.deferred = found.deferred
    if config.on_missing == "fallback":
        apply_fallbacks(config, found.problems)
        verdict.applied = found.problems
    else:
        verdict.problems.extend(found.problems)
    return verdict


def record(folder: RunFolder, verdict: Verdict) -> None:
    """Leave the fallbacks applied in state.json: the trainer writes them into the events as it starts."""
    if verdict.applied:
        folder.write_state(**{STATE_KEY: [p.record() for p in verdict.applied]})
