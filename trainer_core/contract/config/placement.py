"""Where a run's processes go: which GPUs train, which serve vLLM, how many training processes, on how many machines.

Pure and stdlib only, so the launcher can refuse a bad placement before anything starts, and the run's
root process can apply exactly the same plan. In vLLM server mode without a server URL, the first
``vllm_server_gpus`` GPUs serve and the rest train, with the process count reduced to match.

A run over several machines (a Slurm job with ``--nodes N``) has one root process per machine, each given
the same placement and its own ``machine_rank``. Everything in a placement is per machine except the
multi-machine fields: ``num_processes`` is this machine's training processes, ``total_processes`` those of
the whole run (what accelerate calls ``--num_processes``, and the run's world size).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.json_values import is_whole

MULTI_MACHINE_FIELDS = ("num_machines", "machine_rank", "main_process_ip", "main_process_port")


@dataclass
class Placement:
    train_gpus: list[int] = field(default_factory=list)
    """This machine's training GPUs (CUDA_VISIBLE_DEVICES of its ranks); empty: the CPU."""
    server_gpus: list[int] = field(default_factory=list)
    """The GPUs of the run's own vLLM server, on machine 0; empty: no server of its own."""
    num_processes: int = 1
    """Training processes on each machine (not the total: see ``total_processes``)."""
    notes: list[str] = field(default_factory=list)
    num_machines: int = 1
    """Machines the run trains on, each with its own root process and ``num_processes`` ranks."""
    machine_rank: int = 0
    """Which machine this is, 0 to num_machines - 1. Only machine 0's root records the run."""
    main_process_ip: str | None = None
    """The address of machine 0, where the ranks meet (required with several machines)."""
    main_process_port: int | None = None
    """The port on machine 0 where the ranks meet (required with several machines; one machine: a free one)."""

    def __post_init__(self) -> None:
        for name in ("num_processes", "num_machines", "machine_rank"):
            if not is_whole(getattr(self, name), None):
                raise ConfigError(name, f"placement {name} must be an integer, got {getattr(self, name)!r}.")
        if self.num_machines < 1:
            raise ConfigError("num_machines", f"num_machines must be >= 1, got {self.num_machines}.")
        if not 0 <= self.machine_rank < self.num_machines:
            raise ConfigError(
                "machine_rank",
                f"machine_rank must be between 0 and num_machines - 1 "
                f"({self.num_machines - 1}), got {self.machine_rank}.",
            )
        if self.num_machines > 1 and (not self.main_process_ip or not self.main_process_port):
            raise ConfigError(
                "main_process_ip",
                f"a run on {self.num_machines} machines needs main_process_ip and "
                "main_process_port: the address and a free port of machine 0, where the ranks meet.",
            )
        port = self.main_process_port
        if port is not None and not is_whole(port, 1, 65535):
            raise ConfigError("main_process_port", f"main_process_port must be a port number 1-65535, got {port!r}.")

    @property
    def starts_server(self) -> bool:
        return bool(self.server_gpus)

    @property
    def total_processes(self) -> int:
        """The run's training processes over all machines: its world size."""
        return self.num_processes * self.num_machines

    @property
    def multi_machine(self) -> bool:
        return self.num_machines > 1

    @property
    def records_run(self) -> bool:
        """Machine 0's root keeps the run's record (state, events, the end); the others only train."""
        return self.machine_rank == 0

    def train_env(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, self.train_gpus))} if self.train_gpus else {}

    def server_env(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, self.server_gpus))}

    def to_dict(self) -> dict:
        """What ``--placement`` takes and state.json records. The multi-machine fields appear only for a run on
        several machines, so a one-machine record is what it always was."""
        data = {"train_gpus": self.train_gpus, "server_gpus": self.server_gpus, "num_processes": self.num_processes}
        if self.multi_machine:
            data.update({name: getattr(self, name) for name in MULTI_MACHINE_FIELDS})
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Placement:
        """The inverse of ``to_dict``; a record without the multi-machine fields is one machine. Keys this
        version does not know are refused, so a misspelt ``--placement`` key is not silently dropped."""
        if not isinstance(data, dict):
            raise ConfigError("placement", f"a placement is a JSON object, got {type(data).__name__}.")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                "placement", f"unknown placement key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}."
            )
        return cls(**data)

    def for_machine(self, machine_rank: int) -> Placement:
        """The same placement as seen by the root of machine ``machine_rank``."""
        from dataclasses import replace

        return replace(self, machine_rank=machine_rank)


def parse_gpus(text: str | None) -> list[int] | None:
    if text is None or text.strip() in ("", "all"):
        return None
    try:
        gpus = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError("gpus", f"--gpus must be comma-separated GPU indices like 0,1,2; got {text!r}.") from None
    return gpus


def plan(
    config: RunConfig, available: list[int], gpus: list[int] | None = None, num_processes: int | None = None
) -> Placement:
    """Check the requested GPUs against ``available`` and split them between vLLM and training."""
    have = ", ".join(map(str, available)) if available else "none"
    if gpus is not None:
        if not available and gpus:
            raise ConfigError(
                "gpus",
                f"--gpus {','.join(map(str, gpus))} asked for GPUs, but this machine has none. "
                "Leave --gpus out to train on the CPU.",
            )
        missing = [g for g in gpus if g not in available]
        if missing:
            raise ConfigError(
                "gpus", f"GPU {', '.join(map(str, missing))} does not exist; this machine has GPUs {have}."
            )
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
                result.notes.append(
                    f"training on {len(chosen)} process(es): {len(result.server_gpus)} GPU(s) serve vLLM"
                )
                wanted = len(chosen)
            else:
                raise ConfigError(
                    "num_processes",
                    f"--num-processes {wanted} needs {wanted} GPUs, but the run has "
                    f"{len(chosen)} for training ({','.join(map(str, chosen))}).",
                )
        result.num_processes = wanted
    else:
        result.num_processes = num_processes or 1
    return result
