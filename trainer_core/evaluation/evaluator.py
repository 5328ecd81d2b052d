"""Score a model on the held-out set: sample ``eval_generations`` completions per prompt, measure each metric,
and aggregate into one ``eval`` event (mean, pass@K, std across prompts; docs/evaluation.md).

An eval must never change the training it interrupts, so it runs in its own random state: the generators of
torch, CUDA, numpy and ``random`` are saved, seeded with the run's seed (every eval of every checkpoint
samples alike, so ``grpo-tui eval`` later reproduces what the run recorded), and put back; the model goes
back to the mode it was in. Generation is the engine's (engines.py): the model's own ``generate`` on the
unwrapped model (base + adapter for LoRA), or, in a run that generates with vLLM, its engine; the eval event
names the engine. In an agentic run (``heldout.agentic``) each sample is an
episode, played with its tool calls by the trainer's own generation and tool loop (``episodes``,
agentic_eval.py), and the metrics get each episode's messages and its environment instance.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from statistics import fmean, pstdev
from typing import Any

from trainer_core.agents.episodes import transcript_text
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import Eval
from trainer_core.evaluation.engines import TRANSFORMERS, Sampling, TransformersEngine, VLLMEngine, _greedy_once
from trainer_core.evaluation.heldout import HeldOut


@contextmanager
def own_random_state(seed: int):
    """Run the block seeded with ``seed``, then restore every generator as it was."""
    import numpy as np
    import torch

    py_state, np_state, torch_state = random.getstate(), np.random.get_state(), torch.get_rng_state()
    cuda_states = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
        torch.set_rng_state(torch_state)
        if cuda_states is not None:
            torch.cuda.set_rng_state_all(cuda_states)


@dataclass
class Scored:
    """One eval's raw outcome: per metric, per prompt, the values of its K samples; and the completions."""

    values: dict[str, list[list[float]]]
    completions: list[list[str]]


class Evaluator:
    def __init__(self, config: RunConfig, tokenizer, heldout: HeldOut):
        self.config = config
        self.tokenizer = tokenizer
        self.heldout = heldout
        limit = config.eval_max_prompts
        self.rows = heldout.rows[:limit] if limit else heldout.rows
        # an agentic run's episode player (agentic_eval.TrainerEpisodes), bound once its trainer exists
        self.episodes: Callable[[list[dict]], Any] | None = None
        self.engine: TransformersEngine | VLLMEngine = TransformersEngine()  # a vLLM run's engine (engines.py)
        self.temperature: float | None = None  # None: the run's eval_temperature; 0: greedy

    def evaluate(self, model, step: int, *, base: bool = False, train_reward: float | None = None) -> Eval:
        started = time.monotonic()
        scored = self.score(model)
        return Eval(
            step=step,
            metrics=aggregate(scored.values, self.config.eval_generations),
            task_metrics=list(self.heldout.task),
            prompts=len(self.rows),
            generations=self.config.eval_generations,
            seconds=round(time.monotonic() - started, 3),
            engine=self.engine_name,
            base=base,
            train_reward=None if train_reward is None or not math.isfinite(train_reward) else round(train_reward, 6),
        )

    @property
    def sequences(self) -> int:
        """The sequences an eval asks an engine for at once: K per prompt, or one if greedy (``_greedy_once``)."""
        _, asked = _greedy_once(Sampling.of(self.config, self.temperature))
        return len(self.rows) * asked.k

    @property
    def engine_name(self) -> str:
        """The engine that generated the samples: an agentic run's episodes are played by its trainer."""
        if self.heldout.agentic and self.episodes is not None:
            return getattr(self.episodes, "engine", TRANSFORMERS)
        return self.engine.name

    def score(self, model) -> Scored:
        was_training = model.training
        model.eval()
        try:
            with own_random_state(self.config.seed):
                return self._score(model)
        finally:
            model.train(was_training)

    def _score(self, model) -> Scored:
        k = self.config.eval_generations
        values: dict[str, list[list[float]]] = {name: [] for name in self.heldout.scorers}
        completions: list[list[str]] = []
        size = self.config.eval_batch_size
        if self.engine.batches_itself and not self.heldout.agentic:
            size = max(1, len(self.rows))  # one request: the engine schedules it by its KV cache
        for start in range(0, len(self.rows), size):
            rows = self.rows[start : start + size]
            prompts = [r["prompt"] for r in rows for _ in range(k)]
            repeated = [r for r in rows for _ in range(k)]
            environments = None
            if self.heldout.agentic:
                if self.episodes is None:
                    raise RuntimeError("an agentic held-out set is scored with its trainer's episodes: bind them first")
                played = self.episodes(repeated)
                shaped, environments = played.completions, played.environments
                texts = [transcript_text(c) for c in shaped]
            else:
                sampling = Sampling.of(self.config, self.temperature)
                texts = self.engine.generate(model, self.tokenizer, [r["prompt"] for r in rows], sampling)
                shaped = [
                    [{"role": "assistant", "content": t}] if isinstance(p, list) else t for p, t in zip(prompts, texts)
                ]
            completions.extend(texts[i * k : (i + 1) * k] for i in range(len(rows)))
            for name, scorer in self.heldout.scorers.items():
                flat = scorer(prompts, shaped, repeated, environments)
                values[name].extend(list(flat[i * k : (i + 1) * k]) for i in range(len(rows)))
        return Scored(values, completions)


def aggregate(values: dict[str, list[list[float]]], k: int) -> dict[str, dict[str, float | None]]:
    """Per metric: ``mean`` over every sample of every prompt, ``pass@K`` the mean of each prompt's best sample,
    ``std`` of the per-prompt means. NaN (a reward function's None) is left out."""
    out: dict[str, dict[str, float | None]] = {}
    for name, per_prompt in values.items():
        prompt_means, prompt_best = [], []
        for samples in per_prompt:
            finite = [v for v in samples if not math.isnan(v)]
            if finite:
                prompt_means.append(fmean(finite))
                prompt_best.append(max(finite))
        stats: dict[str, float | None] = {
            "mean": round(fmean(prompt_means), 6) if prompt_means else None,
            f"pass@{k}": round(fmean(prompt_best), 6) if prompt_best else None,
            "std": round(pstdev(prompt_means), 6) if len(prompt_means) > 1 else 0.0 if prompt_means else None,
        }
        out[name] = stats
    return out


def generate(
    model, tokenizer, prompts: list[Any], k: int, config: RunConfig, temperature: float | None = None
) -> list[str]:
    """``k`` sampled completions of each prompt with the model's own ``generate`` (prompt i's are at [i*k, (i+1)*k)),
    with the run's sampling at ``temperature`` (default: the eval temperature)."""
    return TransformersEngine().generate(model, tokenizer, prompts, Sampling.of(config, temperature, k))
