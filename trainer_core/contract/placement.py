"""Where a run's processes go: which GPUs train, which serve vLLM, how many training processes.

Pure and stdlib only, so the launcher can refuse a bad placement before anything starts, and the run's
root process can apply exactly the same plan. In vLLM server mode without a server URL, the first
``vllm_server_gpus`` GPUs serve and the rest train, with the process count reduced to match.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import ConfigError, RunConfig


@dataclass
class Placement:
    train_gpus: list[int] = field(default_factory=list)
    server_gpus: list[int] = field(default_factory=list)
    num_processes: int = 1
    notes: list[str] = field(default_factory=list)

    @property
    def starts_server(self) -> bool:
        return bool(self.server_gpus)

    def train_env(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, self.train_gpus))} if self.train_gpus else {}

    def server_env(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, self.server_gpus))}

    def to_dict(self) -> dict:
        return {"train_gpus": self.train_gpus, "server_gpus": self.server_gpus, "num_processes": self.num_processes}


def parse_gpus(text: str | None) -> list[int] | None:
    if text is None or text.strip() in ("", "all"):
        return None
    try:
        gpus = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError("gpus", f"--gpus must be comma-separated GPU indices like 0,1,2; got {text!r}.") from None
    return gpus


def plan(config: RunConfig, available: list[int], gpus: list[int] | None = None,
         num_processes: int | None = None) -> Placement:
    """Check the requested GPUs against ``available`` and split them between vLLM and training."""
    have = ", ".join(map(str, available)) if available else "none"
    if gpus is not None:
        if not available and gpus:
            raise ConfigError("gpus", f"--gpus {','.join(map(str, gpus))} asked for GPUs, but this machine has none. "
                              "Leave --gpus out to train on the CPU.")
        missing = [g for g in gpus if g not in available]
        if missing:
            raise ConfigError("gpus", f"GPU {', '.join(map(str, missing))} does not exist; this machine has GPUs {have}.")
        if len(set(gpus)) != len(gpus):
            raise ConfigError("gpus", f"--gpus lists a GPU twice: {','.join(map(str, gpus))}.")
    chosen = list(available if gpus is None else gpus)
    if num_processes is not None and num_processes < 1:
        raise ConfigError("num_processes", f"--num-processes must be >= 1, got {num_processes}.")
    result = Placement()
    needs_server = config.use_vllm and config.vllm_mode == "server" and not config.vllm_server_url
    if needs_server:
        n = config.vllm_server_gpus
        if len(chosen) < n + 1:
            raise ConfigError(
                "vllm_server_gpus",
                f"vLLM server mode needs {n} GPU(s) for the server and at least 1 to train, but only "
                f"{len(chosen)} are available to this run ({have if gpus is None else ','.join(map(str, chosen))}). "
                "Pass --vllm-server-url to use a running server, or --use-vllm with --vllm-mode colocate.",
            )
        if n % config.vllm_tensor_parallel_size:
            raise ConfigError(
                "vllm_tensor_parallel_size",
                f"vllm_server_gpus ({n}) must be a multiple of vllm_tensor_parallel_size ({config.vllm_tensor_parallel_size}).",
            )
        result.server_gpus, chosen = chosen[:n], chosen[n:]
    result.train_gpus = chosen
    if chosen:
        wanted = num_processes or len(chosen)
        if wanted > len(chosen):
            if needs_server and num_processes is not None and num_processes <= len(chosen) + len(result.server_gpus):
                result.notes.append(f"training on {len(chosen)} process(es): {len(result.server_gpus)} GPU(s) serve vLLM")
                wanted = len(chosen)
            else:
                raise ConfigError("num_processes", f"--num-processes {wanted} needs {wanted} GPUs, but the run has "
                                  f"{len(chosen)} for training ({','.join(map(str, chosen))}).")
        result.num_processes = wanted
    else:
        result.num_processes = num_processes or 1
    return result
