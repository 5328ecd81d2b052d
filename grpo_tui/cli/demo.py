"""``grpo-tui demo``: train the tiny offline model on the demo environment and show it.

In a terminal the run is launched detached and its monitor opens; piped, its metrics print line by line.
The config and the environment ship as package data (``grpo_tui/resources``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from trainer_core.contract.config import RunConfig

from ..resources import demo_config_file, demo_env_file
from ..services.foreground import run_foreground
from ..services.run_status import is_live, live_status
from ..services.supervisor import start_root
from .common import add_runs_dir, add_theme, interactive, run_app
from .starting import create, options
from .tiny_model import cached_tiny_model


def register(sub) -> None:
    parser = sub.add_parser("demo", help="train the tiny model on an example environment and print live metrics")
    add_runs_dir(parser)
    parser.add_argument("--max-steps", type=int, default=600,
                        help="steps to train (default: 600, about half a minute on a laptop CPU)")
    add_theme(parser)
    parser.set_defaults(handler=run)


def demo_config(model_dir: Path, max_steps: int) -> RunConfig:
    config = RunConfig.load(demo_config_file())
    config.model = str(model_dir)
    config.rl_env_module = str(demo_env_file())
    config.max_steps = max_steps
    return config


def run(args) -> int:
    config = demo_config(cached_tiny_model(), args.max_steps)
    start = argparse.Namespace(runs_dir=args.runs_dir, gpus=None, num_processes=None, accelerate_config=None,
                               vllm_port=None, vllm_timeout=None)
    folder, placement = create(config, start)
    if not interactive():
        return run_foreground(folder, placement, options(start))
    start_root(folder, placement, options(start))
    code = run_app(args.runs_dir, args.theme, watch=folder.path, start="watch")
    status = live_status(folder)
    if is_live(status):
        print(f"the demo run {folder.run_id} goes on in the background; stop it with: grpo-tui stop {folder.run_id}")
    else:
        print(f"the demo run {folder.run_id} is {status}; see it again with: grpo-tui watch {folder.run_id}")
    return code
