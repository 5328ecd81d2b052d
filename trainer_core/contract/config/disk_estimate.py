"""Before launch: how much a run will write, and whether the runs folder's filesystem can hold it.

Stdlib only, so the app and ``grpo-tui train``/``launch`` refuse a run that cannot fit before anything
heavy starts, with the numbers. The model's size comes from the model folder: the safetensors headers
(8 bytes of length, then JSON naming every tensor's dtype, shape and byte range — no tensor is read), else
the weights files' sizes, else ``config.json`` (a decoder-only transformer's shapes). A Hub id is not a
folder: the need is then unknown and nothing is refused.

What a run writes (docs/health.md, "Disk space"):

- each checkpoint: the weights (with --peft only the LoRA adapter: ``lora_r x (in + out)`` fp32 values per
  targeted linear layer), AdamW's two fp32 states per trainable parameter, the model folder's config and
  tokenizer files, trainer_state.json (about 1 KiB per logged step) and ~32 KiB of rng, scheduler and args;
- checkpoints kept at once: ``ceil(max_steps / save_steps)`` (a final one at the last step), at most
  ``save_total_limit + 1`` (the Trainer deletes the oldest only after writing the newest); a run by epochs
  has an unknown number of steps, so the estimate counts what it can and says it is a lower bound;
- the final model (``final/``), the events, samples and log (``2 KiB`` + ``samples_per_step`` x
  ``(1 KiB + 4 B x rl_max_new_tokens)`` per step) and the run's reserve (run/disk.py).
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from trainer_core.contract.config.checks import ConfigError
from trainer_core.contract.health.monitor import Thresholds
from trainer_core.contract.run.disk import RESERVE_BYTES, Usage, human, usage
from trainer_core.contract.run.events import HealthWarning, warning
from trainer_core.contract.run.json_values import is_whole
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

_D = TypeVar("_D")

CHECKPOINT_OVERHEAD = 32 * 1024  # rng_state.pth, scheduler.pt, training_args.bin
TRAINER_STATE_PER_STEP = 1024
EVENTS_PER_STEP = 2048
SAMPLE_BYTES, SAMPLE_BYTES_PER_TOKEN = 1024, 4
OPTIMIZER_BYTES_PER_PARAM = 8  # AdamW: exp_avg and exp_avg_sq, fp32 (an upper bound for bf16 states)
ADAPTER_BYTES_PER_PARAM = 4  # PEFT keeps LoRA weights in fp32
FOLDER_SUFFIXES = (".json", ".txt", ".model", ".jinja", ".tiktoken", ".py")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt")
DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8}
NOT_LINEAR = ("embed", "wte", "wpe", "lm_head", "norm", "ln_")  # 2-D tensors LoRA's all-linear does not adapt


@dataclass(frozen=True)
class ModelSize:
    parameters: int
    weights_bytes: int
    other_bytes: int  # config and tokenizer files, copied into every checkpoint
    linear_shapes: tuple[tuple[str, int, int], ...]  # (name, out, in) of every 2-D weight, for LoRA
    source: str


def _safetensors_header(path: Path) -> dict:
    with open(path, "rb") as fh:
        (length,) = struct.unpack("<Q", fh.read(8))
        if length > 100 * 1024 * 1024:
            raise ValueError(f"{path.name}: implausible safetensors header of {length} bytes")
        return json.loads(fh.read(length))


def _from_safetensors(files: list[Path]) -> tuple[int, int, list]:
    params = size = 0
    shapes = []
    for path in files:
        for name, info in _safetensors_header(path).items():
            if name == "__metadata__" or not isinstance(info, dict):
                continue
            shape = [int(d) for d in info.get("shape", [])]
            params += math.prod(shape)
            begin, end = info.get("data_offsets", (0, 0))
            size += int(end) - int(begin)
            if len(shape) == 2:
                shapes.append((name, shape[0], shape[1]))
    return params, size, shapes


def _config_shapes(cfg: dict) -> list[tuple[str, list[int]]]:
    """A decoder-only transformer's tensor shapes from config.json (Llama, Qwen, Mistral, GPT-2 names)."""
    cfg = {**cfg, **(cfg.get("text_config") or {})}

    def pick(*keys: str, default: _D = None) -> int | _D:
        return next((cfg[k] for k in keys if is_whole(cfg.get(k), None)), default)

    hidden, layers, vocab = (
        pick("hidden_size", "n_embd", "d_model"),
        pick("num_hidden_layers", "n_layer", "num_layers"),
        pick("vocab_size"),
    )
    if not (hidden and layers and vocab):
        return []
    heads = pick("num_attention_heads", "n_head", default=1)
    kv_heads = pick("num_key_value_heads", default=heads)
    head_dim = pick("head_dim", default=hidden // max(heads, 1))
    inter = pick("intermediate_size", "n_inner", "ffn_dim", default=4 * hidden)
    experts = pick("num_local_experts", "num_experts", "n_routed_experts", default=1)
    shapes = [("embed_tokens", [vocab, hidden]), ("norm", [hidden])]
    if not cfg.get("tie_word_embeddings", False):
        shapes.append(("lm_head", [vocab, hidden]))
    for i in range(layers):
        p = f"layers.{i}."
        shapes += [
            (p + "q_proj", [heads * head_dim, hidden]),
            (p + "k_proj", [kv_heads * head_dim, hidden]),
            (p + "v_proj", [kv_heads * head_dim, hidden]),
            (p + "o_proj", [hidden, heads * head_dim]),
            (p + "input_layernorm", [hidden]),
            (p + "post_attention_layernorm", [hidden]),
        ]
        for e in range(experts):
            q = p + (f"experts.{e}." if experts > 1 else "")
            shapes += [
                (q + "gate_proj", [inter, hidden]),
                (q + "up_proj", [inter, hidden]),
                (q + "down_proj", [hidden, inter]),
            ]
    return shapes


def _weights_files(folder: Path, files: list[Path]) -> list[Path]:
    """The safetensors the model loads from: the index's shards, else model.safetensors, else every one (some
    repositories also ship other copies, e.g. Mistral's consolidated.safetensors)."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        shards = json.loads(index.read_text()).get("weight_map", {}).values()
        return sorted({folder / str(name) for name in shards})
    if (folder / "model.safetensors").is_file():
        return [folder / "model.safetensors"]
    return sorted(
        p for p in files if p.suffix == ".safetensors" and not p.name.startswith(("adapter_", "consolidated"))
    )


def model_size(model: str | os.PathLike | None) -> ModelSize | None:
    """The model folder's parameters and bytes; None when ``model`` is not a local folder (a Hub id)."""
    folder = Path(model) if model else None
    if folder is None or not folder.is_dir():
        return None
    files = [p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")]
    other = sum(p.stat().st_size for p in files if p.suffix in FOLDER_SUFFIXES and not p.name.endswith(".index.json"))
    try:
        safetensors = _weights_files(folder, files)
        if safetensors:
            params, size, shapes = _from_safetensors(safetensors)
            return ModelSize(params, size, other, tuple(shapes), "safetensors headers")
    except (OSError, ValueError, AttributeError, struct.error):
        pass
    try:
        cfg = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        cfg = {}
    named = _config_shapes(cfg) if isinstance(cfg, dict) else []
    params = sum(math.prod(s) for _, s in named)
    linear = tuple((n, s[0], s[1]) for n, s in named if len(s) == 2)
    weights = sum(p.stat().st_size for p in files if p.suffix in WEIGHT_SUFFIXES)
    if weights:
        return ModelSize(params or weights // 2, weights, other, linear, "weights file sizes")
    if params:
        dtype = str(cfg.get("dtype") or cfg.get("torch_dtype") or "float32")
        return ModelSize(params, params * DTYPE_BYTES.get(dtype, 4), other, linear, "config.json")
    return None


def lora_parameters(size: ModelSize, r: int, target_modules: str) -> int:
    """LoRA's A and B matrices (``r x (in + out)``) for every targeted linear layer."""
    targets = None if target_modules == "all-linear" else {t.strip() for t in target_modules.split(",") if t.strip()}
    total = 0
    for name, out, inp in size.linear_shapes:
        module = name.removesuffix(".weight")
        leaf = module.rsplit(".", 1)[-1]
        if targets is None:
            if any(word in module.lower() for word in NOT_LINEAR):
                continue
        elif leaf not in targets and module not in targets:
            continue
        total += r * (out + inp)
    return total


@dataclass(frozen=True)
class Estimate:
    total: int
    checkpoint_bytes: int
    checkpoints: int
    final_bytes: int
    logs_bytes: int
    parameters: int
    trainable: int
    lower_bound: bool  # by epochs: the number of steps (so of checkpoints) is not known before launch
    source: str

    def describe(self) -> str:
        bound = "at least " if self.lower_bound else "about "
        return (
            f"{bound}{human(self.total)} ({self.checkpoints} checkpoint(s) x {human(self.checkpoint_bytes)} + "
            f"final model {human(self.final_bytes)} + events, samples and log {human(self.logs_bytes)}; "
            f"{self.trainable:,} trainable of {self.parameters:,} parameters, from the {self.source})"
        )


def estimate(config) -> Estimate | None:
    """What the run of ``config`` (a RunConfig) will write, or None when the model is not a local folder."""
    size = model_size(config.model)
    if size is None:
        return None
    if config.peft:
        trainable = lora_parameters(size, config.lora_r, config.target_modules)
        weights = trainable * ADAPTER_BYTES_PER_PARAM
    else:
        trainable, weights = size.parameters, size.weights_bytes
    steps = config.max_steps if config.max_steps and config.max_steps > 0 else None
    logged = (steps or 0) // max(config.logging_steps, 1)
    per_checkpoint = (
        weights
        + trainable * OPTIMIZER_BYTES_PER_PARAM
        + size.other_bytes
        + CHECKPOINT_OVERHEAD
        + logged * TRAINER_STATE_PER_STEP
    )
    saves = math.ceil(steps / max(config.save_steps, 1)) if steps else 1
    if config.save_total_limit:
        saves = min(saves, config.save_total_limit + 1) if steps else config.save_total_limit + 1
    per_step = EVENTS_PER_STEP + config.samples_per_step * (
        SAMPLE_BYTES + SAMPLE_BYTES_PER_TOKEN * config.rl_max_new_tokens
    )
    logs = (steps or 0) * per_step
    final = weights + size.other_bytes
    total = saves * per_checkpoint + final + logs + RESERVE_BYTES
    return Estimate(
        total,
        per_checkpoint,
        saves,
        final,
        logs,
        size.parameters,
        trainable,
        lower_bound=steps is None and not config.save_total_limit,
        source=size.source,
    )


@dataclass(frozen=True)
class Preflight:
    """The verdict before launch: ``ok``, ``tight`` (fits within the margin only), ``no_room``, ``unknown``."""

    verdict: str
    message: str
    estimate: Estimate | None = None
    usage: Usage | None = None
    evidence: dict = field(default_factory=dict)

    @property
    def refuses(self) -> bool:
        return self.verdict == "no_room" and self.evidence.get("disk_check", 1) != 0

    @property
    def severity(self) -> Severity:
        return {"no_room": Severity.CRITICAL, "tight": Severity.WARN}.get(self.verdict, Severity.INFO)


def preflight(config, runs_dir: str | os.PathLike) -> Preflight:
    """Compare the estimate with the free space of the filesystem that will hold ``runs_dir``."""
    t = Thresholds.from_mapping(config.health if isinstance(config.health, dict) else None)
    try:
        need = estimate(config)
    except OSError:
        need = None
    if need is None:
        return Preflight(
            "unknown",
            f"the disk space this run needs is unknown: {config.model!r} is not a local model "
            "folder (a Hub id is downloaded at start); nothing was checked.",
        )
    space = usage(runs_dir)
    if space is None:
        return Preflight(
            "unknown", f"the free space of {runs_dir} cannot be read; the run needs {need.describe()}.", need
        )
    evidence = {
        "estimated_bytes": need.total,
        "free_bytes": space.free,
        "filesystem": space.mount,
        "runs_dir": str(runs_dir),
        "checkpoint_bytes": need.checkpoint_bytes,
        "checkpoints": need.checkpoints,
        "disk_check": t.disk_check,
        "disk_margin": t.disk_margin,
    }
    where = f"the filesystem holding {runs_dir} ({space.mount}) has {human(space.free)} free"
    if need.total > space.free:
        how = (
            "--health disk_check=0 was given, so it starts anyway and will fail when the disk fills"
            if t.disk_check == 0
            else "pass --health disk_check=0 to start anyway"
        )
        return Preflight(
            "no_room",
            f"the run needs {need.describe()}, but {where}: it cannot finish. Free space, point "
            f"--runs-dir at a larger filesystem, or keep fewer checkpoints (--save-total-limit, --save-steps); "
            f"{how}.",
            need,
            space,
            evidence,
        )
    if need.total * t.disk_margin > space.free:
        return Preflight(
            "tight",
            f"the run needs {need.describe()} and {where}: less than {t.disk_margin:g}x the need "
            "(--health disk_margin), so anything else writing there can fill it.",
            need,
            space,
            evidence,
        )
    return Preflight("ok", f"the run needs {need.describe()}; {where}.", need, space, evidence)


def preflight_warning(check: Preflight, step: int = 0) -> HealthWarning:
    """The ``disk_estimate`` warning event for a run that starts although it fits only barely, or not at all."""
    return warning(HealthRule.DISK_ESTIMATE, check.severity, step, check.message, check.evidence)


def require_room(config, runs_dir: str | os.PathLike) -> Preflight:
    """``preflight``, raising ConfigError with its numbers when the filesystem cannot hold the run (unless
    ``--health disk_check=0``)."""
    check = preflight(config, runs_dir)
    if check.refuses:
        raise ConfigError("save_total_limit", check.message)
    return check
