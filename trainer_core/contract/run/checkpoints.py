"""Which checkpoints count: a checkpoint is complete, or it is not one.

A save is a sequence of files (the Trainer writes the weights, then the optimizer, the scheduler, the RNG
state, and ``trainer_state.json`` last), so a full disk or a SIGKILL during a save leaves a
``checkpoint-N`` folder that looks like a checkpoint and is not one. Handing it to the Trainer fails the
resume and, worse, hides the good checkpoint before it. This module says, with the standard library alone
(the app and the root process use it too), whether a checkpoint is complete and, when it is not, why:

- ``trainer_state.json`` parses and its ``global_step`` is the folder's N;
- the model weights are there and whole: ``model.safetensors``, sharded ``model-*.safetensors`` with their
  index, a LoRA ``adapter_model.safetensors`` with ``adapter_config.json``, or the ``.bin`` variants. A
  safetensors file is an 8-byte little-endian header length and a JSON header whose offsets must fit in
  the file; a torch ``.bin``/``.pt`` is a zip archive whose central directory, at its very end, must read;
- for a resume, the optimizer and the scheduler too (``optimizer.pt``, ``scheduler.pt``; DeepSpeed and
  FSDP keep theirs in folders of their own, which are accepted as they are).

Resume and merge take the newest complete checkpoint; a resume moves the incomplete ones to
``checkpoints/torn/`` (a folder the Trainer's ``checkpoint-*`` glob never scans), never deleting them.
"""

from __future__ import annotations

import json
import os
import struct
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from trainer_core.contract.run.events import HealthWarning, warning
from trainer_core.contract.run.json_values import is_whole
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

TORN_DIR = "torn"
TORN_NOTE = "grpo_tui_torn.json"
_MAX_HEADER = 100 * 1024 * 1024


def checkpoint_step(path: Path) -> int | None:
    """N of a ``checkpoint-N`` folder name, else None."""
    prefix, _, number = Path(path).name.rpartition("-")
    return int(number) if prefix == "checkpoint" and number.isdigit() else None


@dataclass(frozen=True)
class CheckpointCheck:
    """One checkpoint folder and what keeps it from being complete (nothing, when it is)."""

    path: Path
    step: int
    problems: tuple[str, ...] = ()
    training_problems: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def complete(self) -> bool:
        """Everything a resume needs: trainer state, weights, optimizer and scheduler."""
        return not self.problems and not self.training_problems

    @property
    def has_model(self) -> bool:
        """Enough to merge or export: the trainer state (written last) and whole weights."""
        return not self.problems

    def why(self) -> str:
        return "; ".join((*self.problems, *self.training_problems)) or "complete"

    def describe(self) -> str:
        return f"{self.name}: {self.why()}"


def check_safetensors(path: Path) -> str | None:
    """None when the file's header parses and every tensor's bytes fit in the file, else what is wrong."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                return f"{path.name} is truncated ({size} bytes)"
            length = struct.unpack("<Q", head)[0]
            if length > min(size - 8, _MAX_HEADER):
                return f"{path.name} is truncated (header of {length} bytes in a file of {size})"
            header = json.loads(fh.read(length))
    except OSError as exc:
        return f"{path.name} cannot be read: {exc.strerror or exc}"
    except (ValueError, RecursionError):
        return f"{path.name} has a damaged header"
    if not isinstance(header, dict):
        return f"{path.name} has a damaged header"
    end = 0
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(is_whole(o, None) for o in offsets)):
            return f"{path.name} has a damaged header (tensor {key})"
        end = max(end, offsets[1])
    if 8 + length + end > size:
        return f"{path.name} is truncated ({size} of {8 + length + end} bytes)"
    return None


def check_torch_file(path: Path) -> str | None:
    """None when a torch-saved file's zip directory (written last) reads and has torch's layout (one folder
    holding ``data.pkl``), else what is wrong."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except OSError as exc:
        return f"{path.name} cannot be read: {exc.strerror or exc}"
    except zipfile.BadZipFile:
        return f"{path.name} is truncated or not a torch file ({path.stat().st_size} bytes)"
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) != 1 or f"{next(iter(tops))}/data.pkl" not in names:
        return f"{path.name} is not a torch file (no data.pkl in one folder)"
    return None


def _check_file(path: Path) -> str | None:
    if not path.is_file():
        return f"{path.name} is missing"
    return check_safetensors(path) if path.name.endswith(".safetensors") else check_torch_file(path)


def _check_index(folder: Path, index_name: str) -> list[str]:
    try:
        weight_map = json.loads((folder / index_name).read_text()).get("weight_map")
    except (OSError, ValueError, AttributeError, RecursionError):
        return [f"{index_name} is damaged"]
    if not isinstance(weight_map, dict) or not weight_map:
        return [f"{index_name} lists no shards"]
    return [p for p in (_check_file(folder / shard) for shard in sorted(set(map(str, weight_map.values())))) if p]


def weight_problems(folder: Path) -> list[str]:
    """What is wrong with a model folder's weights (full model, shards, or LoRA adapter); [] when whole."""
    for name in ("adapter_model.safetensors", "adapter_model.bin"):
        if (folder / name).exists():
            problems = [p for p in (_check_file(folder / name),) if p]
            try:
                json.loads((folder / "adapter_config.json").read_text())
            except OSError:
                problems.append("adapter_config.json is missing")
            except (ValueError, RecursionError):
                problems.append("adapter_config.json is damaged")
            return problems
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).exists():
            problem = _check_file(folder / name)
            return [problem] if problem else []
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        if (folder / index).exists():
            return _check_index(folder, index)
    if _fsdp_or_deepspeed(folder):
        return []
    return ["no model weights (model.safetensors, adapter_model.safetensors or shards)"]


def _fsdp_or_deepspeed(folder: Path) -> bool:
    """FSDP's sharded folders and DeepSpeed's ``global_stepN`` keep weights and optimizer in their own form."""
    return any(folder.glob("pytorch_model_fsdp*")) or (folder / "latest").is_file() or any(folder.glob("global_step*"))


def _trainer_state_problems(folder: Path, step: int) -> list[str]:
    try:
        state = json.loads((folder / "trainer_state.json").read_text())
    except FileNotFoundError:
        return ["trainer_state.json is missing (the save did not finish)"]
    except OSError as exc:
        return [f"trainer_state.json cannot be read: {exc.strerror or exc}"]
    except (ValueError, RecursionError):  # not UTF-8, not JSON, or nested past the parser's depth
        return ["trainer_state.json is truncated or damaged"]
    recorded = state.get("global_step") if isinstance(state, dict) else None
    if recorded != step:
        return [f"trainer_state.json records step {recorded}, not {step}"]
    return []


def _training_problems(folder: Path) -> list[str]:
    if _fsdp_or_deepspeed(folder):
        return []
    problems = []
    for names in (("optimizer.pt", "optimizer.bin"), ("scheduler.pt",)):
        present = next((folder / n for n in names if (folder / n).exists()), None)
        problem = _check_file(present) if present else f"{names[0]} is missing"
        if problem:
            problems.append(problem)
    return problems


def check_checkpoint(path: str | os.PathLike) -> CheckpointCheck:
    """Everything wrong with one ``checkpoint-N`` folder (see the module's docstring)."""
    path = Path(path)
    step = checkpoint_step(path)
    if step is None or not path.is_dir():
        return CheckpointCheck(path, step or 0, ("not a checkpoint-N folder",))
    problems = _trainer_state_problems(path, step) + weight_problems(path)
    return CheckpointCheck(path, step, tuple(problems), tuple(_training_problems(path)))


def check_checkpoints(checkpoints_dir: str | os.PathLike) -> list[CheckpointCheck]:
    """Every ``checkpoint-N`` folder of a run's checkpoints/, checked, oldest first."""
    folder = Path(checkpoints_dir)
    if not folder.is_dir():
        return []
    found = {p: step for p in folder.iterdir() if p.is_dir() and (step := checkpoint_step(p)) is not None}
    return [check_checkpoint(p) for p in sorted(found, key=found.__getitem__)]


def newest(
    checks: list[CheckpointCheck], *, for_resume: bool = True
) -> tuple[CheckpointCheck | None, list[CheckpointCheck]]:
    """The newest checkpoint good enough (complete for a resume; whole weights to merge), and the newer ones
    it passed over because they are not."""
    skipped = []
    for check in reversed(checks):
        if check.complete if for_resume else check.has_model:
            return check, skipped
        skipped.append(check)
    return None, skipped


def complete_checkpoints(checkpoints_dir: str | os.PathLike) -> list[Path]:
    """The complete checkpoints of a run's checkpoints/, oldest first."""
    return [c.path for c in check_checkpoints(checkpoints_dir) if c.complete]


def move_aside(check: CheckpointCheck, now: float | None = None) -> Path:
    """Move an incomplete checkpoint to ``checkpoints/torn/checkpoint-N.<UTC time>`` with a note of why.

    Out of the Trainer's sight (it globs ``checkpoint-*`` in checkpoints/ to rotate and to find the last
    one), and kept: what it holds may still be worth something to its owner."""
    now = time.time() if now is None else now
    torn = check.path.parent / TORN_DIR
    torn.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    target = torn / f"{check.name}.{stamp}"
    suffix = 1
    while target.exists():
        suffix += 1
        target = torn / f"{check.name}.{stamp}-{suffix}"
    os.replace(check.path, target)
    try:  # best effort: on a full disk the move matters, the note does not
        note = {
            "from": f"{check.path.parent.name}/{check.name}",
            "moved": round(now, 3),
            "step": check.step,
            "problems": [*check.problems, *check.training_problems],
        }
        (target / TORN_NOTE).write_text(json.dumps(note, indent=2) + "\n")
    except OSError:
        pass
    return target


def torn_checkpoint_warning(skipped: list[dict], resumed_from: str, step: int) -> HealthWarning:
    """The ``warning`` a resumed run writes when it passed over incomplete checkpoints (``skipped`` as the
    state's ``resume_skipped``: ``name``, ``problems``, ``moved_to``)."""
    names = ", ".join(s.get("name", "?") for s in skipped)
    why = "; ".join(f"{s.get('name', '?')}: {'; '.join(s.get('problems') or [])}" for s in skipped)
    return warning(
        HealthRule.TORN_CHECKPOINT,
        Severity.WARN,
        step,
        f"resumed from {resumed_from}, skipping incomplete checkpoint(s) {names} ({why}).",
        {"resumed_from": resumed_from, "skipped": skipped},
    )
