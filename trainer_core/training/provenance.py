"""What a run was made with: library versions, the seed, and a hash of the environment's source (for a dataset
run: of its dataset file and reward-function files).

Written to ``provenance.json`` in the run folder when training starts, so a result can be traced and
repeated: the same config.yaml with the same versions and the same environment code gives the same run.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import sys
import time
from pathlib import Path

from trainer_core.contract.config.code_refs import is_file_path, parse_code_ref
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.config.stack import RECORDED_VERSIONS
from trainer_core.contract.run.folder import RunFolder, write_json_atomic


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in RECORDED_VERSIONS:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def environment_source(config: RunConfig) -> dict:
    """The environment module's file and the sha256 of its source (found the way the loader finds it)."""
    spec = config.rl_env_module or ""
    path = None
    if is_file_path(spec):
        path = Path(spec).expanduser().resolve()
    else:
        module = sys.modules.get(spec)
        file = getattr(module, "__file__", None) if module is not None else None
        if file:
            path = Path(file).resolve()
    if path is None or not path.is_file():
        return {"module": spec, "class": config.rl_env_class, "file": None, "sha256": None}
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"module": spec, "class": config.rl_env_class, "file": str(path), "sha256": digest}


def _file_digest(path: Path) -> dict:
    path = path.expanduser().resolve()
    if not path.is_file():
        return {"file": str(path), "sha256": None}
    return {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def dataset_sources(config: RunConfig) -> dict:
    """A dataset run's dataset (hashed when it is one file) and its reward functions (files hashed)."""
    dataset = {"dataset": config.dataset, "config": config.dataset_config, "split": config.dataset_split}
    if config.dataset and Path(config.dataset).expanduser().is_file():
        dataset.update(_file_digest(Path(config.dataset)))
    rewards = []
    for name, weight in config.reward_funcs.items():
        ref = parse_code_ref(name)
        entry = {"name": name, "weight": weight}
        if ref is not None and ref.file:
            entry.update(_file_digest(Path(ref.file)))
        rewards.append(entry)
    return {"dataset": dataset, "reward_funcs": rewards}


def write_provenance(folder: RunFolder, config: RunConfig) -> dict:
    record = {
        "time": round(time.time(), 3),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": package_versions(),
        "seed": config.seed,
        "environment": environment_source(config),
    }
    if config.dataset or config.reward_funcs:
        record.update(dataset_sources(config))
    path = folder.path / "provenance.json"
    history = []
    if path.exists():
        try:
            previous = json.loads(path.read_text())
            history = [*previous.pop("previous", []), previous]
        except ValueError:
            history = []
    if history:
        record["previous"] = history
    write_json_atomic(path, record)
    return record
