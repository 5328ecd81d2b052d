"""``grpo-tui eval``: score a run's checkpoints and its base model on the held-out set, side by side.

The work happens in a ``python -m trainer_core eval`` child process (this one stays torch-free); with
``--host`` the whole command runs on that host, where the run is (cli/remote.py), as ``merge`` does.
"""

from __future__ import annotations

import subprocess
import sys

from trainer_core.contract.run.events import EVAL_ENGINES

from .common import add_host, add_run_ref, needs_trainer, resolve, run_config


def register(sub) -> None:
    parser = sub.add_parser(
        "eval",
        help="score a run's checkpoints and its base model on the held-out set (docs/evaluation.md)",
        description="Score the chosen models on the run's held-out set with the run's own metrics and sampling, "
        "and print them side by side, ranked, with a few prompts whose verdict changed.",
    )
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument(
        "--checkpoint",
        action="append",
        default=None,
        metavar="WHICH",
        help="a model to score, repeatable: base (the run's model before training), best (by the held-out metric), "
        "final, last, or a step number (default: base, best, final)",
    )
    parser.add_argument(
        "--dataset", default=None, metavar="PATH", help="score on these prompts instead of the run's held-out set"
    )
    parser.add_argument(
        "--engine",
        choices=EVAL_ENGINES,
        default=None,
        help="what generates the samples: vllm (one engine start; each model's weights loaded into it) or "
        "transformers (the model's own generate). Default: what the run generated with",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=None,
        metavar="T",
        help="sampling temperature of the eval; 0 is greedy (default: the run's --eval-temperature)",
    )
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.set_defaults(handler=run, forward=True)


def run(args) -> int:
    needs_trainer("eval", "eval on the run's host (--host NAME)")
    folder = resolve(args)
    run_config(folder)  # a broken config.yaml is named here, not in the child's traceback
    cmd = [sys.executable, "-m", "trainer_core", "eval", str(folder.path)]
    for which in args.checkpoint or []:
        cmd += ["--checkpoint", which]
    if args.dataset:
        cmd += ["--dataset", args.dataset]
    if args.engine:
        cmd += ["--engine", args.engine]
    if args.temperature is not None:
        cmd += ["--temperature", repr(args.temperature)]
    if args.json:
        cmd.append("--json")
    return subprocess.call(cmd)
