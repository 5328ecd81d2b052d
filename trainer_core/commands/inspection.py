"""The reward-inspection gate: sample and score completions exactly as training would, before training.

RL only sharpens what the model can already sometimes do, and a reward that scores the wrong thing trains
the wrong thing cleanly. So before a real run: generate ``rl_num_generations`` completions for enough
prompts with the run's sampling settings, score each with the environment (and its composed reward
functions) or, for a dataset run, with its reward functions, and flag what would make the run pointless — exceptions, out-of-range scores, identical
scores, groups with no spread, a model that never succeeds, or one that already always does.

Writes ``inspection.jsonl`` (one scored completion per line) and ``summary.json`` into the folder.
"""

from __future__ import annotations

import json
import math
import sys
import time
import traceback
from collections.abc import Iterable
from pathlib import Path
from statistics import mean, pstdev
from typing import TYPE_CHECKING, Any, cast

from trainer_core.agents.episodes import (
    EpisodeReward,
    check_tool_calling,
    environment_factory,
    episode_sample,
    load_tools,
    play_episode,
    rollout_tools,
    standalone,
    timed,
    tool_functions,
    transcript_text,
)
from trainer_core.contract.config.checks import is_dataset_run
from trainer_core.contract.config.inspection_key import config_key
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import JsonlWriter
from trainer_core.contract.run.events import clean
from trainer_core.contract.run.folder import write_json_atomic
from trainer_core.contract.run.severity import Severity
from trainer_core.environment.user_code import UserCodeError
from trainer_core.environment.user_env import ScoreEpisodeReward, extra_reward_functions, load_environment
from trainer_core.evaluation.evaluator import generate

if TYPE_CHECKING:
    import datasets

MAX_ERRORS = 5


def summarize(records: list[dict], num_generations: int) -> dict:
    scores = [r["score"] for r in records if isinstance(r.get("score"), (int, float))]
    errors = [r for r in records if r.get("error")]
    groups: dict[int, list[float]] = {}
    for r in records:
        if isinstance(r.get("score"), (int, float)):
            groups.setdefault(r["prompt_index"], []).append(r["score"])
    spreads = [pstdev(g) for g in groups.values() if len(g) > 1]
    zero_spread = sum(1 for s in spreads if s == 0)
    histogram = [0] * 10
    for s in scores:
        if 0 <= s <= 1:
            histogram[min(int(s * 10), 9)] += 1
    summary = {
        "samples": len(records),
        "scored": len(scores),
        "errors": len(errors),
        "num_generations": num_generations,
        "mean": mean(scores) if scores else None,
        "std": pstdev(scores) if len(scores) > 1 else None,
        "min": min(scores) if scores else None,
        "max": max(scores) if scores else None,
        "success_rate": (sum(1 for s in scores if s > 0) / len(scores)) if scores else None,
        "histogram": histogram,
        "groups": len(groups),
        "zero_spread_groups": zero_spread,
        "group_spreads": [round(s, 4) for s in spreads],
    }
    summary["flags"] = flags(summary, errors)
    return summary


def flags(summary: dict, errors: list[dict]) -> list[dict]:
    out = []

    def flag(name, severity: str, message):
        out.append({"flag": name, "severity": Severity(severity).value, "message": message})

    bad_range = [e for e in errors if e.get("kind") == "out_of_range"]
    raised = [e for e in errors if e.get("kind") == "exception"]
    if raised:
        first = raised[0]
        flag(
            "exception",
            Severity.CRITICAL,
            f"scoring raised on {len(raised)} completion(s); first: {first['error']} "
            f"(case: {json.dumps(first.get('columns'), default=str)[:200]}).",
        )
    if bad_range:
        flag(
            "out_of_range",
            Severity.CRITICAL,
            f"{len(bad_range)} score(s) outside [0, 1] or not finite, e.g. {bad_range[0].get('raw_score')}; "
            "training would stop on the first one.",
        )
    scored = summary["scored"]
    if scored and summary["min"] == summary["max"]:
        flag(
            "all_identical",
            Severity.CRITICAL,
            f"every score is {summary['min']}: GRPO learns nothing when all completions score the same.",
        )
    if summary["groups"] and summary["zero_spread_groups"]:
        frac = summary["zero_spread_groups"] / summary["groups"]
        flag(
            "zero_spread_groups",
            Severity.WARN if frac < 0.5 else Severity.CRITICAL,
            f"{summary['zero_spread_groups']} of {summary['groups']} groups ({frac:.0%}) have zero spread: GRPO gets no "
            "signal from them (every advantage is zero).",
        )
    if scored and summary["max"] == 0:
        flag(
            "never_succeeds",
            Severity.CRITICAL,
            "The model never succeeds (every score is 0): start with SFT, make the task easier, "
            "or give partial credit.",
        )
    if scored and summary["min"] >= 1.0:
        flag(
            "ceiling",
            Severity.WARN,
            "Everything already scores 1.0: there is nothing left to learn on these prompts; make them harder.",
        )
    return out


def inspect(config: RunConfig, out_dir: Path, samples: int = 64, progress=print) -> dict:
    import torch
    from transformers.utils import logging as hf_logging

    from trainer_core.training.trl_setup import load_tokenizer, prepare_dataset, required

    hf_logging.disable_progress_bar()
    torch.manual_seed(config.seed)
    tokenizer = load_tokenizer(required(config.model, "model"), config)
    if is_dataset_run(config):
        dataset, score_group, weights = _dataset_run_scoring(config, tokenizer)
        model = _load_model(config)
    else:
        env = load_environment(
            required(config.rl_env_module, "rl_env_module"),
            required(config.rl_env_class, "rl_env_class"),
            config.rl_env_config,
        )
        own_tools, shared_tools = tool_functions(env), load_tools(config.tools)
        if own_tools or shared_tools:
            check_tool_calling(tokenizer, str(config.model))
            model = _load_model(config)
            dataset = prepare_dataset(env, tokenizer, config, None, agentic=True)
            score_group, weights = _episode_scoring(config, env, tokenizer, model, own_tools, shared_tools)
            return _inspect_rows(config, dataset, score_group, weights, out_dir, samples, progress, tokenizer)
        dataset = prepare_dataset(env, tokenizer, config, None)
        extra_funcs, extra_weights = extra_reward_functions(env)
        model = _load_model(config)
        scorer = ScoreEpisodeReward(env, tokenizer)
        scorer.model = model
        weights = {"score_episode": 1.0, **{f.__name__: w for f, w in zip(extra_funcs, extra_weights)}}

        def score_group(index, text, prompt, completions, columns):
            group = [_score(scorer, index, text, c, columns) for c in completions]
            _extra_rewards(group, extra_funcs, prompt, completions, columns)
            return group

    return _inspect_rows(config, dataset, score_group, weights, out_dir, samples, progress, tokenizer, model)


def _inspect_rows(config, dataset, score_group, weights, out_dir, samples, progress, tokenizer, model=None) -> dict:
    """Draw the prompts, have ``score_group`` score ``rl_num_generations`` of each (generating them with
    ``model`` unless it plays its own episodes), write the records and the summary."""
    from trainer_core.training.trl_setup import prompt_text

    g = config.rl_num_generations
    # drawn from as a Dataset: an IterableDataset has no len() or select() and fails here (not supported yet)
    dataset = cast("datasets.Dataset", dataset)
    prompts = min(len(dataset), max(1, math.ceil(samples / g)))
    rows = dataset.shuffle(seed=config.seed).select(range(prompts))
    records: list[dict] = []
    writer = JsonlWriter(out_dir / "inspection.jsonl")
    started = time.time()
    try:
        for index, row in enumerate(cast("Iterable[dict[str, Any]]", rows)):  # an unformatted Dataset's rows
            columns = {k: v for k, v in row.items() if k != "prompt"}
            text = prompt_text(row["prompt"], tokenizer)
            completions = (
                generate(model, tokenizer, [text], g, config, config.rl_temperature)
                if model is not None
                else [None] * g
            )
            group = score_group(index, text, row["prompt"], completions, columns)
            for record in group:
                writer.write(record)
            records += group
            progress(f"prompt {index + 1}/{prompts}: scores {[r.get('score') for r in group]}")
            if sum(1 for r in records if r.get("error")) >= MAX_ERRORS * g:
                break
    finally:
        writer.close()
    summary = summarize(records, g)
    summary.update(
        config_key=config_key(config),
        seconds=round(time.time() - started, 2),
        time=round(time.time(), 3),
        reward_weights=weights,
    )
    write_json_atomic(out_dir / "summary.json", clean(summary))
    return summary


def _episode_scoring(config: RunConfig, env, tokenizer, model, own_tools, shared_tools):
    """(score_group, weights) of an agentic environment: each completion is a real episode with the tools,
    played on an instance of its own (as in training), and scored by get_reward or score_episode."""
    factory = environment_factory(env, config.rl_env_config, config.tool_timeout) if own_tools else None
    shared = [*standalone(env, own_tools, config.tool_timeout), *(timed(t, config.tool_timeout) for t in shared_tools)]
    scorer = EpisodeReward(env, tokenizer)
    scorer.model = model

    def score_group(index, text, prompt, completions, columns):
        group = []
        for _ in completions:
            rollout = factory() if factory is not None else None
            messages = list(prompt)
            record: dict[str, Any] = {"prompt_index": index, "prompt": text, "columns": columns}
            try:
                observation = rollout.reset(**columns) if rollout is not None else None
                if observation:
                    messages[-1] = {**messages[-1], "content": f"{messages[-1]['content']}{observation}"}
                episode = play_episode(model, tokenizer, messages, rollout_tools(rollout, shared), config)
                record.update(episode_sample(prompt, episode, None, columns))
                record["prompt"] = text
                if scorer.owns_reward and rollout is not None:
                    record["score"] = scorer._get_reward(rollout.env, episode, columns)
                else:
                    record["score"] = scorer._score_one(transcript_text(episode), columns)
            except UserCodeError as exc:
                record.setdefault("completion", "")
                record.update(failure(exc))
            record.pop("reward", None)
            group.append(record)
        return group

    return score_group, {scorer.__name__: 1.0}


def _load_model(config: RunConfig):
    from transformers import AutoModelForCausalLM

    from trainer_core.training.trl_setup import required

    init = config.grpo_args.get("model_init_kwargs") or {}
    kwargs = {k: init[k] for k in ("revision", "trust_remote_code") if isinstance(init, dict) and k in init}
    model = AutoModelForCausalLM.from_pretrained(required(config.model, "model"), **kwargs)
    model.eval()
    return model


def _dataset_run_scoring(config: RunConfig, tokenizer):
    """(dataset, score_group, weights) of a dataset run: its reward functions, called as TRL calls them."""
    from types import SimpleNamespace

    from trainer_core.environment.dataset_source import DatasetSource
    from trainer_core.rewards.reward_funcs import RewardFunctions
    from trainer_core.training.trl_setup import prepare_dataset

    dataset = prepare_dataset(DatasetSource(config), tokenizer, config, None)
    rewards = RewardFunctions(config.reward_funcs)
    state = SimpleNamespace(global_step=0, max_steps=config.max_steps, epoch=0.0)

    def ignore(*args, **kwargs):
        return None

    def score_group(index, text, prompt, completions, columns):
        n = len(completions)
        shaped = (
            [[{"role": "assistant", "content": c}] for c in completions] if isinstance(prompt, list) else completions
        )
        ids = [tokenizer(c, add_special_tokens=False)["input_ids"] for c in completions]
        group = [{"prompt_index": index, "prompt": text, "completion": c, "columns": columns} for c in completions]
        try:
            per_completion = rewards.score(
                [prompt] * n,
                shaped,
                completion_ids=ids,
                trainer_state=state,
                log_extra=ignore,
                log_metric=ignore,
                **{k: [v] * n for k, v in columns.items()},
            )
        except UserCodeError as exc:
            for record in group:
                record.update(failure(exc))
            return group
        for record, values in zip(group, per_completion):
            record.update(score=rewards.total(values), rewards=values)
        return group

    return dataset, score_group, dict(zip(rewards.names, rewards.weights))


def _score(scorer: ScoreEpisodeReward, index: int, prompt: str, completion: str, columns: dict) -> dict:
    record = {"prompt_index": index, "prompt": prompt, "completion": completion, "columns": columns}
    try:
        record["score"] = scorer._score_one(completion, columns)
    except UserCodeError as exc:
        record.update(failure(exc))
    return record


def failure(exc: UserCodeError) -> dict:
    """What a record holds of a score that failed: no score, the error's first line, its kind (an exception, or
    a value out of range with the raw value) and the user's traceback."""
    raw = (exc.case or {}).get("score")
    return {
        "score": None,
        "error": str(exc).splitlines()[0],
        "kind": "out_of_range" if raw is not None else "exception",
        "raw_score": raw,
        "traceback": exc.user_traceback,
    }


def _extra_rewards(group: list[dict], funcs, prompt, completions: list[str], columns: dict) -> None:
    for func in funcs:
        kwargs = {k: [v] * len(completions) for k, v in columns.items()}
        shaped = (
            [[{"role": "assistant", "content": c}] for c in completions] if isinstance(prompt, list) else completions
        )
        try:
            values = func(prompts=[prompt] * len(completions), completions=shaped, **kwargs)
        except Exception as exc:
            for record in group:
                record.setdefault("reward_errors", {})[func.__name__] = f"{type(exc).__name__}: {exc}"
            continue
        for record, value in zip(group, values):
            record.setdefault("rewards", {})[func.__name__] = value


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m trainer_core inspect")
    parser.add_argument("out_dir", type=Path, help="folder holding config.yaml; the report is written there")
    parser.add_argument("--samples", type=int, default=64)
    args = parser.parse_args(argv)
    config = RunConfig.load(args.out_dir / "config.yaml")
    try:
        inspect(config, args.out_dir, args.samples, progress=lambda line: print(line, flush=True))
    except UserCodeError as exc:
        error = {"error": str(exc), "traceback": exc.user_traceback or traceback.format_exc()}
        write_json_atomic(args.out_dir / "summary.json", {"failed": True, **error, "config_key": config_key(config)})
        print(f"error: {exc}", file=sys.stderr)
        if exc.user_traceback:
            print(exc.user_traceback, file=sys.stderr)
        return 1
    return 0
