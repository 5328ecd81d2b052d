"""Reward inspections on the app side: start one, read its report, find the one a config already has.

An inspection lives in ``RUNS_DIR/inspections/ID/`` (config.yaml, inspection.jsonl, summary.json,
inspect.log). It runs in a child process (it loads the model), so this module stays torch-free. A run
launched through the gate records the inspection's id in its config (``inspection``) and gets a copy of
the report in its own folder.

An inspection is a pass only when it wrote a report that scored completions: a child that crashed (no
``summary.json``), one that recorded a failure, or one whose every score raised gives nothing to read and
nothing to launch with (``Inspection.failure``, what the app's gate and ``grpo-tui inspect`` both say).
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
from trainer_core.contract.config.model_source import require_model
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import read_records
from trainer_core.contract.run.folder import RunFolder, resolve_runs_dir
from trainer_core.contract.run.process import run_env, spawn_logged

SUBDIR = "inspections"
LOG_LINES = 20  # of inspect.log, shown when an inspection failed
LOG_TAIL_BYTES = 64 * 1024


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

    def failure(self, exit_code: int | None = None) -> str | None:
        """Why this inspection is no pass, in words (None: it scored completions). ``exit_code``: its child's."""
        summary = self.summary()
        if not summary:
            return no_report(exit_code)
        if summary.get("failed"):
            return str(summary.get("error") or "the inspection failed")
        if not summary.get("scored"):
            samples, errors = summary.get("samples", 0), summary.get("errors", 0)
            return f"the inspection scored nothing: {errors} of {samples} completion(s) failed to score"
        return None

    def log_tail(self, lines: int = LOG_LINES) -> list[str]:
        """The last ``lines`` lines of inspect.log (a traceback ends there); [] without one."""
        try:
            with open(self.log, "rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - LOG_TAIL_BYTES))
                text = fh.read().decode("utf-8", errors="replace")
        except OSError:
            return []
        return text.splitlines()[-lines:]


def no_report(exit_code: int | None) -> str:
    return "the inspection wrote no report" + ("" if exit_code is None else f" (exit code {exit_code})")


def inspections_dir(runs_dir) -> Path:
    return resolve_runs_dir(runs_dir) / SUBDIR


def create(config: RunConfig, runs_dir) -> Inspection:
    """The inspection's folder with its config, after the checks a launch makes first: the config, and the
    hardware pre-flight on this machine, where the inspection runs (``PreflightError`` with every problem; with
    on_missing fallback, the fallbacks are applied to the copy of the config it saves)."""
    config.validate()
    require_model(config.model)  # loaded here: a folder or Hub id this machine can load (config/model_source.py)
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
    """The newest inspection that scored completions with this config's model, environment and sampling."""
    base = inspections_dir(runs_dir)
    if not base.is_dir():
        return None
    key = config_key(config)
    for path in sorted((p for p in base.iterdir() if p.is_dir()), reverse=True):
        inspection = Inspection(path)
        summary = inspection.summary()
        if summary.get("config_key") == key and "flags" in summary and inspection.failure() is None:
            return inspection
    return None


def attach(inspection: Inspection | None, run: RunFolder) -> None:
    """Copy the inspection report into a run folder that was launched through the gate."""
    if inspection is None:
        return
    for name in ("inspection.jsonl", "summary.json"):
        src = inspection.path / name
        if src.exists():
            shutil.copyfile(src, run.path / ("inspection_summary.json" if name == "summary.json" else name))
