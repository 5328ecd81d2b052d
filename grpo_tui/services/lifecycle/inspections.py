"""Reward inspections on the app side: start one, read its report, find the one a config already has.

An inspection lives in ``RUNS_DIR/inspections/ID/`` (config.yaml, inspection.jsonl, summary.json,
inspect.log). It runs in a child process (it loads the model), so this module stays torch-free. A run
launched through the gate records the inspection's id in its config (``inspection``) and gets a copy of
the report in its own folder.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from grpo_tui.services.machine import hardware
from trainer_core.contract.config.inspection_key import config_key
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import read_records
from trainer_core.contract.run.folder import RunFolder, resolve_runs_dir
from trainer_core.contract.run.process import run_env, spawn_logged

SUBDIR = "inspections"


@dataclass
class Inspection:
    path: Path

    @property
    def id(self) -> str:
        return self.path.name

    def summary(self) -> dict:
        try:
            return json.loads((self.path / "summary.json").read_text())
        except (OSError, ValueError):
            return {}

    def records(self) -> list[dict]:
        return read_records(self.path / "inspection.jsonl")

    @property
    def log(self) -> Path:
        return self.path / "inspect.log"


def inspections_dir(runs_dir) -> Path:
    return resolve_runs_dir(runs_dir) / SUBDIR


def create(config: RunConfig, runs_dir) -> Inspection:
    """The inspection's folder with its config, after the checks a launch makes first: the config, and the
    hardware pre-flight on this machine, where the inspection runs (``PreflightError`` with every problem; with
    on_missing fallback, the fallbacks are applied to the copy of the config it saves)."""
    config.validate()
    config = copy.deepcopy(config)  # the caller's config launches later, and gets its own fallbacks then
    hardware.check(config, here=True).raise_problems()
    folder = RunFolder.create(inspections_dir(runs_dir))
    folder.save_config(config)
    return Inspection(folder.path)


def command(inspection: Inspection, samples: int) -> list[str]:
    return [sys.executable, "-m", "trainer_core", "inspect", str(inspection.path), "--samples", str(samples)]


def start(inspection: Inspection, samples: int) -> subprocess.Popen:
    """Run the inspection in a child process, its output in inspect.log."""
    return spawn_logged(command(inspection, samples), inspection.log, run_env(inspection.path), new_session=True)


def find_for(config: RunConfig, runs_dir) -> Inspection | None:
    """The newest finished inspection made with this config's model, environment and sampling."""
    base = inspections_dir(runs_dir)
    if not base.is_dir():
        return None
    key = config_key(config)
    for path in sorted((p for p in base.iterdir() if p.is_dir()), reverse=True):
        summary = Inspection(path).summary()
        if summary.get("config_key") == key and not summary.get("failed") and "flags" in summary:
            return Inspection(path)
    return None


def attach(inspection: Inspection | None, run: RunFolder) -> None:
    """Copy the inspection report into a run folder that was launched through the gate."""
    if inspection is None:
        return
    for name in ("inspection.jsonl", "summary.json"):
        src = inspection.path / name
        if src.exists():
            shutil.copyfile(src, run.path / ("inspection_summary.json" if name == "summary.json" else name))
