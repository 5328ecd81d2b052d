"""``grpo-tui info``: this installation and machine as a remote caller needs them: version, run format, which
kind of install (light, or with the trainer), GPUs."""

from __future__ import annotations

import json

from ..executors.local import LocalExecutor
from ..safe_text import clean, clean_line
from .common import TRAIN_EXTRA, add_runs_dir

INSTALLS = {
    "light": f"light (the app and the CLI: watch, list, stop, export; to train here: {TRAIN_EXTRA})",
    "train": "train (the app, the CLI and the trainer)",
}


def register(sub) -> None:
    parser = sub.add_parser(
        "info",
        help="grpo-tui's version, the run format it writes, whether it can train here, the runs folder and the GPUs",
    )
    add_runs_dir(parser)
    parser.add_argument("--json", action="store_true", help="print it as JSON")
    parser.set_defaults(handler=run)


def describe(runs_dir=None) -> dict:
    """What a remote caller parses into ``executors/wire.HostInfo``: this machine's executor's ``info()``."""
    return LocalExecutor(runs_dir).info().to_wire()


def run(args) -> int:
    info = describe(args.runs_dir)
    if args.json:
        print(json.dumps(info))
        return 0
    gpus = info["gpus"]
    print(
        clean(
            f"grpo-tui {info['version']} (run format {info['run_format']}) on {info['hostname']}, "
            f"python {info['python']}\ninstall: {INSTALLS.get(info['install'], info['install'])}"
            f"\nruns folder: {info['runs_dir']}\nGPUs: {len(gpus)}"
            + "".join(f"\n  {g['index']}: {clean_line(g['name'])}" for g in gpus)
        )
    )
    return 0
