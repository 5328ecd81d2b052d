"""``python -m trainer_core worker|run|inspect|merge|eval|tiny-model``: the trainer's processes and commands.

``worker RUN_DIR`` is the training process and ``run`` the run's root process; ``inspect`` is the reward
inspection before a launch, ``merge`` exports a run's model, ``eval`` scores its checkpoints on the held-out
set, and ``tiny-model`` builds the offline model the demo and the tests use.

Launchers (``grpo-tui train``, ``launch``, ``accelerate launch``) create the run folder and its
config.yaml first, then start this entry point on every rank. It never imports Textual. The worker exits 0
for a completed run, 3 for a stopped one, 2 for a mistake in what the user gave (a config, an environment, a
dataset or a tool that is refused before training; the run's error event says what and the fix), 1 for any
other failure; the run's root passes that code on.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainer_core", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    worker = sub.add_parser("worker", help="run the training described by RUN_DIR/config.yaml")
    worker.add_argument("run_dir", type=Path)
    worker.add_argument("--echo", action="store_true", help="print a line per logged step")
    run = sub.add_parser(
        "run",
        help="the root process of a run (placement, vLLM server, trainer, final record); "
        "one per machine (--machine-rank N|slurm)",
        add_help=False,
    )
    run.add_argument("rest", nargs=argparse.REMAINDER)
    for name, helptext in (
        ("merge", "merge LoRA adapters into the base model / export a run's model"),
        ("inspect", "generate and score completions before training (the reward-inspection gate)"),
        ("eval", "score a run's checkpoints and its base model on the held-out set"),
        ("tiny-model", "build the tiny offline model the demo and the tests train"),
    ):
        extra = sub.add_parser(name, help=helptext, add_help=False)
        extra.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "merge":
        from trainer_core.commands.merge import main as merge_main

        return merge_main(args.rest)
    if args.command == "inspect":
        from trainer_core.commands.inspection import main as inspect_main

        return inspect_main(args.rest)
    if args.command == "eval":
        from trainer_core.commands.evaluate import main as eval_main

        return eval_main(args.rest)
    if args.command == "tiny-model":
        from trainer_core.commands.tiny_model_build import main as tiny_model_main

        return tiny_model_main(args.rest)
    if args.command == "run":
        from trainer_core.root.run_root import main as run_main

        return run_main(args.rest)

    from trainer_core.training.runner import run_in_folder

    from .contract.config.run_config import ConfigError, RunConfig
    from .contract.run.folder import RunFolder
    from .contract.run.status import EXIT_BAD_INPUT, Status

    folder = RunFolder(args.run_dir)
    try:
        config = RunConfig.load(folder.config_file)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    result = run_in_folder(config, folder, echo=args.echo)
    if result.bad_input:
        return EXIT_BAD_INPUT  # a mistake in what the user gave, found before training: the run folder names it and the fix
    return {Status.COMPLETED: 0, Status.STOPPED: 3}.get(result.status, 1)


if __name__ == "__main__":
    sys.exit(main())
