"""``grpo-tui export RUN``: hand a run's settings back as a file another tool, or grpo-tui, can run again.

``--format trl`` writes the `trl grpo --config` recipe of a dataset + reward-functions run
(``grpo_tui/services/trl_export.py``), ``--format grpo-tui`` grpo-tui's own config. Without ``--format`` every run
exports: the recipe where TRL can express the run, else (an environment run) grpo-tui's config, with a note
saying why. Converting is
pure contract-level code: this command needs neither torch nor TRL. With ``--host`` the run is read on
that host and the file, with ``--output``, written here.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from grpo_tui.services.trl_export import own_config_text, recipe_text
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.ledger import resolve_checkpoint

from .common import BadInput, add_host, add_run_ref, resolve, run_config

FORMATS = ("trl", "grpo-tui")
AUTO = "auto"


def register(sub) -> None:
    parser = sub.add_parser(
        "export",
        help="print a run's settings as a trl grpo recipe or as a grpo-tui config",
        description="Print (or write, with --output) a run's settings: --format trl gives the YAML that `trl grpo "
        "--config` accepts (dataset + reward-function runs; what TRL has no key for is listed in its header), "
        "--format grpo-tui the config `grpo-tui train --config` accepts; by default the first where TRL can express "
        "the run, else the second, with a note. Exit code: 0 written, 2 bad input or, with --format trl, a run TRL "
        "cannot express (an environment run).",
    )
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument(
        "--format",
        dest="export_format",
        choices=(AUTO, *FORMATS),
        default=AUTO,
        help="trl: a trl grpo recipe; grpo-tui: grpo-tui's own config; auto (default): the recipe when TRL can "
        "express the run, else grpo-tui's config",
    )
    parser.add_argument("--output", type=Path, default=None, metavar="FILE", help="write it to FILE instead of stdout")
    parser.add_argument(
        "--checkpoint",
        default=None,
        metavar="WHICH",
        help="start the exported settings from this checkpoint's model instead of the run's base model: best (by the "
        "held-out metric), final, last or a step number (a full fine-tune's; merge a LoRA one first)",
    )
    parser.set_defaults(handler=run)


def from_checkpoint(config: RunConfig, folder, which: str) -> RunConfig:
    """The config with ``model`` set to the checkpoint ``which`` names: training goes on from its weights."""
    try:
        entry = resolve_checkpoint(folder.path, which)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    if (entry.path / "adapter_config.json").exists():
        raise BadInput(
            f"{entry.name} of run {folder.run_id} is a LoRA adapter, not a model: merge it first "
            f"(grpo-tui merge {folder.run_id} --checkpoint {which} --output DIR) and train from DIR."
        )
    return dataclasses.replace(config, model=str(entry.path.resolve()))


def text_for(config: RunConfig, run_id: str, export_format: str) -> str:
    if export_format == "grpo-tui":
        return own_config_text(config)
    try:
        text, notes = recipe_text(config, run_id)
    except ConfigError as exc:
        if export_format == AUTO:
            print(
                f"note: run {run_id} is not a dataset + reward-functions run, the only kind `trl grpo` can run "
                f"({exc.field}): this is grpo-tui's own config, which `grpo-tui train --config` runs "
                "(--format trl says why TRL cannot)",
                file=sys.stderr,
            )
            return own_config_text(config)
        raise BadInput(str(exc)) from None
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return text


def run(args) -> int:
    from .remote import is_remote

    if is_remote(args):
        code, text = _remote_text(args)
        if code:
            return code
    else:
        folder = resolve(args)
        config = run_config(folder)
        if args.checkpoint is not None:
            config = from_checkpoint(config, folder, args.checkpoint)
        text = text_for(config, folder.run_id, args.export_format)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        args.output.write_text(text)
    except OSError as exc:
        raise BadInput(f"--output {args.output}: {exc.strerror}") from None
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _remote_text(args) -> tuple[int, str]:
    """The host's own ``export`` output (its notes shown here); ``--output`` stays this machine's."""
    from ..executors.hosts import HostError
    from .remote import remote_words, ssh_executor

    ex = ssh_executor(args)
    try:
        ex.info()
        words, _ = remote_words(args, ex)
        words = _without_output(words)
        done = ex.conn.run(words, timeout=120)
    except HostError as exc:
        raise BadInput(str(exc)) from None
    sys.stderr.write(done.stderr.decode(errors="replace"))
    return done.returncode, done.stdout.decode()


def _without_output(words: list[str]) -> list[str]:
    out, j = [], 0
    while j < len(words):
        if words[j] == "--output":
            j += 2
            continue
        if not words[j].startswith("--output="):
            out.append(words[j])
        j += 1
    return out
