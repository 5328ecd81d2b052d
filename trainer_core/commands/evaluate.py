"""``python -m trainer_core eval RUN``: score a run's checkpoints and its base model on the held-out set.

After training, the question is which model to ship. This loads each chosen model (``base``: the run's
model before training; ``best``, ``final``, ``last`` or a step, through the checkpoint ledger; a LoRA
checkpoint as base + adapter, never merged to disk), scores it on the run's held-out set (or ``--dataset``)
with the run's own metrics, seed and sampling, and prints them side by side, with a few prompts whose
verdict changed between the first model named (the base, when it is named) and the others. Because an eval
seeds its own sampling, a checkpoint scores here as it scored when the run recorded it. An agentic run's
episodes are played by a GRPOTrainer built around each model with the run's settings and tools, as during
the run (evaluation/agentic.py). ``--engine vllm`` (the default for a run that generated with vLLM) starts one
vLLM engine and loads each model's weights into it in turn (generation/eval_engine.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.ledger import default_metric, resolve_checkpoint
from trainer_core.contract.run.status import EXIT_BAD_INPUT
from trainer_core.environment.user_code import UserCodeError
from trainer_core.evaluation.engines import ENGINES, TRANSFORMERS, VLLM

SHOWN_CHANGES = 3
SAMPLE_CHARS = 200  # of each prompt's first completion, in the JSON report


def _load(config: RunConfig, which: str, folder: RunFolder):
    """(label, step, model) of ``which``."""
    from transformers import AutoModelForCausalLM

    from trainer_core.training.trl_setup import required

    base = required(config.model, "model")
    if which == "base":
        return "base", 0, AutoModelForCausalLM.from_pretrained(base)
    entry = resolve_checkpoint(folder.path, which)
    if (entry.path / "adapter_config.json").exists():
        from peft import PeftModel

        model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), str(entry.path))
    else:
        model = AutoModelForCausalLM.from_pretrained(str(entry.path))
    return model_label(which, entry.step), entry.step, model


def model_label(which: str, step: int | None) -> str:
    """A column's name: what the user asked for and the step it resolved to (``best (step 20)``, ``step 40``),
    never a folder name that repeats the request (the final model's folder is named ``final``)."""
    if which == "base":
        return "base"
    at = "step ?" if step is None else f"step {step}"
    return f"{which} ({at})" if which in ("best", "final", "last") else at


def evaluate_run(
    run_dir: Path,
    which: list[str],
    dataset: str | None = None,
    engine: str | None = None,
    temperature: float | None = None,
) -> dict:
    """Score each model of ``which``; ``engine``: ``vllm`` or ``transformers`` (default: what the run generated
    with); ``temperature``: the eval's (default: the run's eval_temperature; 0: greedy)."""
    import time

    from transformers.utils import logging as hf_logging

    from trainer_core.evaluation.evaluator import Evaluator, aggregate
    from trainer_core.training.trl_setup import load_tokenizer, required, reward_setup

    hf_logging.disable_progress_bar()
    folder = RunFolder(run_dir)
    config = RunConfig.load(folder.config_file)
    engine = engine or (VLLM if config.use_vllm else TRANSFORMERS)
    _check_engine(engine, temperature)
    if dataset:
        config.eval_dataset, config.eval_fraction, config.eval_split = dataset, None, None
    for spec in which:  # every name resolves before a model loads
        if spec != "base":
            resolve_checkpoint(folder.path, spec)
    tokenizer = load_tokenizer(required(config.model, "model"), config)
    setup = reward_setup(config, tokenizer, None)
    if setup.heldout is None:
        raise ConfigError(
            "eval_dataset",
            f"run {folder.run_id} has no held-out set: name one with --dataset PATH (its prompts, with the columns the "
            "run's reward reads).",
        )
    if temperature == 0 and setup.heldout.agentic:
        raise ConfigError(
            "temperature", "--temperature 0 (greedy) is for runs without tool calls; give an agentic run's eval > 0."
        )
    if engine == VLLM and setup.heldout.agentic:
        raise ConfigError(
            "engine",
            f"run {folder.run_id} plays its held-out episodes with tool calls, through a GRPOTrainer built around "
            "each model: score it with --engine transformers (the run's own evals use its vLLM engine).",
        )
    evaluator = Evaluator(config, tokenizer, setup.heldout)
    evaluator.temperature = temperature
    from trainer_core.generation import eval_engine

    llm = None
    if engine == VLLM:
        from trainer_core.evaluation.engines import VLLMEngine

        llm = eval_engine.start(config, required(config.model, "model"), folder.path, config.seed)
        evaluator.engine = VLLMEngine(llm=llm)
    metric = default_metric(folder.path) or next(iter(setup.heldout.scorers))
    results, per_prompt = [], []
    for spec in which:
        label, step, model = _load(config, spec, folder)
        loaded = None
        if llm is not None:
            loaded = eval_engine.load(llm, model)
        if setup.heldout.agentic:
            from trainer_core.evaluation.agentic import TrainerEpisodes, eval_trainer
            from trainer_core.training.trl_setup import build_grpo_config

            trainer = eval_trainer(config, tokenizer, setup, model, build_grpo_config)
            model = trainer.model
            evaluator.episodes = TrainerEpisodes(trainer, evaluator.temperature or config.eval_temperature)
        setup.bind(model)
        started = time.monotonic()
        scored = evaluator.score(model)
        results.append(
            {
                "checkpoint": spec,
                "label": label,
                "step": step,
                "metrics": aggregate(scored.values, config.eval_generations),
                "seconds": round(time.monotonic() - started, 3),
                "loaded_as": loaded,
                "samples": [c[0][:SAMPLE_CHARS] if c else "" for c in scored.completions],
            }
        )
        per_prompt.append(scored)
    ranked = sorted(results, key=lambda r: -(r["metrics"].get(metric, {}).get("mean") or -1.0))
    return {
        "run_id": folder.run_id,
        "metric": metric,
        "prompts": len(evaluator.rows),
        "generations": config.eval_generations,
        "engine": engine,
        "engine_starts": 1 if llm is not None else 0,
        "engine_dtype": eval_engine.dtype_of(llm) if llm is not None else None,
        "temperature": config.eval_temperature if temperature is None else temperature,
        "models": results,
        "ranking": [r["label"] for r in ranked],
        "changed": _changes(evaluator.rows, results, per_prompt, metric),
    }


def _check_engine(engine: str, temperature: float | None) -> None:
    if engine not in ENGINES:
        raise ConfigError("engine", f"--engine {engine!r} is not an engine; use one of {', '.join(ENGINES)}.")
    if temperature is not None and (temperature != temperature or temperature < 0):
        raise ConfigError("temperature", f"--temperature must be 0 (greedy) or more, got {temperature!r}.")
    if engine == VLLM:
        try:
            import vllm  # noqa: F401  # pyright: ignore[reportMissingImports]  # the vllm extra
        except ImportError:
            raise ConfigError(
                "engine",
                "--engine vllm needs vLLM in the trainer's environment: install grpo-tui[vllm] (on a machine without "
                "a GPU, ./dev vllm-env), or use --engine transformers.",
            ) from None


def _changes(rows: list[dict], results: list[dict], scored: list, metric: str) -> list[dict]:
    """Prompts whose verdict (the metric's mean over its samples, at least 0.5) differs between the reference
    (the base model when it was named, else the first) and each other model: the first few of each."""
    if len(results) < 2 or metric not in scored[0].values:
        return []
    ref = next((i for i, r in enumerate(results) if r["checkpoint"] == "base"), 0)
    first = scored[ref].values[metric]
    out = []
    for index, (result, other) in enumerate(zip(results, scored)):
        if index == ref:
            continue
        values = other.values[metric]
        shown = 0
        for i, row in enumerate(rows):
            before, after = sum(first[i]) / len(first[i]), sum(values[i]) / len(values[i])
            if (before >= 0.5) != (after >= 0.5) and shown < SHOWN_CHANGES:
                shown += 1
                out.append(
                    {
                        "prompt": str(row["prompt"])[:200],
                        "from": results[ref]["label"],
                        "to": result["label"],
                        "before": round(before, 4),
                        "after": round(after, 4),
                        "completion_before": scored[ref].completions[i][0][:200],
                        "completion_after": other.completions[i][0][:200],
                    }
                )
    return out


def render(report: dict) -> str:
    labels = [m["label"] for m in report["models"]]
    names = list(report["models"][0]["metrics"]) if report["models"] else []
    stats = [s for s in (report["models"][0]["metrics"][names[0]] if names else {})]
    width = max([len(label) for label in labels] + [10])
    how = sorted({m["loaded_as"] for m in report["models"] if m.get("loaded_as")})
    lines = [
        f"run {report['run_id']}: {report['prompts']} held-out prompts x {report['generations']} samples at "
        f"temperature {report['temperature']:g}; ranked by {report['metric']}",
        f"engine: {report['engine']}"
        + (f" (one start, {report['engine_dtype']}; models loaded into it as {' and '.join(how)})" if how else "")
        + "; seconds: "
        + ", ".join(f"{m['label']} {m['seconds']:.1f}" for m in report["models"]),
        "metric".ljust(28) + "".join(label.rjust(width + 2) for label in labels),
    ]
    for name in names:
        for stat in stats:
            cells = []
            for model in report["models"]:
                value = model["metrics"].get(name, {}).get(stat)
                cells.append(("-" if value is None else f"{value:.3f}").rjust(width + 2))
            lines.append(f"{name} {stat}"[:28].ljust(28) + "".join(cells))
    lines.append("ranking: " + " > ".join(report["ranking"]))
    for change in report["changed"]:
        lines.append(
            f"changed {change['from']} -> {change['to']}: {change['before']:.2f} -> {change['after']:.2f} "
            f"{change['prompt']!r}\n    before: {change['completion_before']!r}\n    after:  {change['completion_after']!r}"
        )
    return "\n".join(_visible(line) for line in "\n".join(lines).split("\n"))


def _visible(text: str) -> str:
    """A line for the terminal: names from the run folder and the user's code are data, so a control character
    in one is shown escaped (``\\x1b``), never sent."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainer_core eval")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoint", action="append", default=None)
    parser.add_argument("--dataset", default=None)
    parser.add_argument("--engine", default=None)
    parser.add_argument("--temperature", type=float, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        report = evaluate_run(
            args.run_dir, args.checkpoint or ["base", "best", "final"], args.dataset, args.engine, args.temperature
        )
    except (ConfigError, UserCodeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0
