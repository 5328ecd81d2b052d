"""Ship a run's result: merge LoRA adapters into the base model, or export a full fine-tune.

The output folder holds a plain model and tokenizer that ``AutoModelForCausalLM.from_pretrained`` loads
with no PEFT involved. The source is a checkpoint (``--checkpoint best|final|last|N``), else the completed run's
``final/``, else the newest checkpoint whose trainer state and weights are whole: a save cut short (a
full disk, a kill) leaves a folder that merely looks like a checkpoint (``trainer_core.contract.run.checkpoints``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.checkpoints import check_checkpoint, check_checkpoints, newest
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.ledger import resolve_checkpoint
from trainer_core.contract.run.status import EXIT_BAD_INPUT, Status


class MergeError(RuntimeError):
    pass


def merge_source(folder: RunFolder, checkpoint: int | str | None = None, notes: list[str] | None = None) -> Path:
    """The folder to merge: the one asked for (``best``, ``final``, ``last`` or step N: ``checkpoint-N``; refused
    when it is torn), else a completed run's ``final/``, else the newest checkpoint whose weights are whole (newer
    torn ones are named in ``notes``)."""
    notes = [] if notes is None else notes
    checks = check_checkpoints(folder.checkpoints_dir)
    if isinstance(checkpoint, str) and not checkpoint.isdigit():
        try:
            return resolve_checkpoint(folder.path, checkpoint).path
        except ValueError as exc:
            raise MergeError(str(exc)) from None
    if checkpoint is not None:
        checkpoint = int(checkpoint)
        path = folder.checkpoints_dir / f"checkpoint-{checkpoint}"
        if not path.is_dir():
            have = ", ".join(str(c.step) for c in checks) or "none"
            raise MergeError(f"run {folder.run_id} has no checkpoint {checkpoint}; it has: {have}.")
        check = check_checkpoint(path)
        if not check.has_model:
            good = ", ".join(str(c.step) for c in checks if c.has_model) or "none"
            raise MergeError(
                f"checkpoint-{checkpoint} of run {folder.run_id} is incomplete: {check.why()}. "
                f"Checkpoints that can be merged: {good}."
            )
        return path
    final = folder.path / "final"
    has_final = (final / "config.json").exists() or (final / "adapter_config.json").exists()
    if has_final and (folder.status() is Status.COMPLETED or not checks):
        return final
    picked, skipped = newest(checks, for_resume=False)
    notes.extend(f"skipped {c.describe()}" for c in skipped)
    if picked is None:
        if has_final:
            return final
        what = f" (none is complete: {'; '.join(c.describe() for c in skipped)})" if skipped else ""
        raise MergeError(f"run {folder.run_id} has no final model and no checkpoint to merge{what}.")
    return picked.path


def merge(run_dir: Path, output: Path, checkpoint: int | str | None = None) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = RunFolder(Path(run_dir))
    config = RunConfig.load(folder.config_file)
    notes: list[str] = []
    source = merge_source(folder, checkpoint, notes)
    for note in notes:
        print(f"note: {note}", file=sys.stderr, flush=True)
    is_adapter = (source / "adapter_config.json").exists()
    if is_adapter:
        from peft import PeftModel

        if config.model is None:
            raise MergeError(
                f"run {folder.run_id}'s config names no model: the base model of its LoRA adapter is unknown."
            )
        base = AutoModelForCausalLM.from_pretrained(config.model)
        model = PeftModel.from_pretrained(base, str(source)).merge_and_unload()
    else:
        model = AutoModelForCausalLM.from_pretrained(str(source))
    tokenizer_source = source if (source / "tokenizer_config.json").exists() else config.model
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_source))
    output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(output))
    tokenizer.save_pretrained(str(output))
    record = {"run_id": folder.run_id, "source": str(source), "base_model": config.model, "lora_merged": is_adapter}
    (output / "grpo_tui_merge.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m trainer_core merge")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--checkpoint", default=None)
    args = parser.parse_args(argv)
    try:
        record = merge(args.run_dir, args.output, args.checkpoint)
    except MergeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    kind = "LoRA adapters merged into" if record["lora_merged"] else "full fine-tune exported from"
    print(f"{kind} {record['source']} -> {args.output}")
    return 0
