"""``grpo-tui info``: this installation and machine as a remote caller needs them: version, run format, GPUs."""

from __future__ import annotations

import json
import socket
import sys
from dataclasses import asdict

from trainer_core.contract.run_folder import FORMAT_VERSION, resolve_runs_dir

from .. import __version__
from ..safe_text import clean, clean_line
from ..services.gpus import list_gpus
from .common import add_runs_dir


def register(sub) -> None:
    parser = sub.add_parser("info", help="grpo-tui's version, the run format it writes, the runs folder and the GPUs")
    add_runs_dir(parser)
    parser.add_argument("--json", action="store_true", help="print it as JSON")
    parser.set_defaults(handler=run)


def describe(runs_dir=None) -> dict:
    return {"version": __version__, "run_format": FORMAT_VERSION, "hostname": socket.gethostname(),
            "runs_dir": str(resolve_runs_dir(runs_dir).expanduser().absolute()),
            "python": sys.version.split()[0], "gpus": [asdict(g) for g in list_gpus()]}


def run(args) -> int:
    info = describe(args.runs_dir)
    if args.json:
        print(json.dumps(info))
        return 0
    gpus = info["gpus"]
    print(clean(f"grpo-tui {info['version']} (run format {info['run_format']}) on {info['hostname']}, "
                f"python {info['python']}\nruns folder: {info['runs_dir']}\nGPUs: {len(gpus)}"
                + "".join(f"\n  {g['index']}: {clean_line(g['name'])}" for g in gpus)))
    return 0
