"""Held-out episodes of an agentic run, played through TRL's own generation and tool loop.

Why TRL's loop: a held-out episode must be played as a training episode is, or the eval measures something
else than what is trained. TRL renders the prompt with the tools' schemas, generates, parses tool calls out
of the text (``parse_response``), calls each tool with the parsed arguments (an exception becomes
``{'error': …}``), appends the results, drops a result that would overrun ``max_completion_length``, and
stops at ``max_tool_calling_iterations``. A copy of that loop here would drift from TRL's with every release,
so the eval calls it, on the trainer the run trains with (``grpo-tui eval`` builds one with the run's config).

It relies on these internals of TRL's ``GRPOTrainer`` (checked against :data:`TRL_VERSIONS`; any other TRL
stops the run before the model loads, with :func:`check_trl_version`'s message):

- ``_generate(prompts)``: tokenizes chat prompts with the tool schemas (``_tokenize_prompts``), generates one
  completion per prompt, parses it and runs ``_tool_call_loop``; its fourth result is each rollout's
  messages. With ``model.training`` off it logs into ``_metrics["eval"]``.
- the per-batch state that ``_generate_and_score_completions`` sets up before calling it: ``environments``
  (one instance per rollout, from ``environment_factories[None]``, each ``reset`` with its row),
  ``_batch_environments``, and ``_sync_tool_dicts``/``_async_tool_dicts`` (the standalone tools,
  ``_standalone_tools``, and the rollout's public methods but ``reset`` and ``get_reward``);
- the regular ``model.generate`` path of ``_generate_single_turn``, sampling with ``generation_config`` (and
  ``generation_kwargs``), taken when ``use_vllm`` and ``use_transformers_continuous_batching`` are off; with
  vLLM, its ``vllm_generation`` (``temperature``, ``mode``, ``llm``) and ``num_generations_eval``;
- ``accelerator.gather`` in ``_generate``'s length metrics.

The eval must not change the training it interrupts: every attribute above is put back as it was (the
training's environment instances are never reset, the eval has a pool of its own), ``_metrics`` is swapped
for a scratch one, generation uses ``eval_temperature``, through the run's vLLM engine when it trains with one (else the model's
own ``generate``; TRL's loop syncs the engine's weights to the step first), trackers are off for its profiling, and ``gather`` is the identity (only rank 0
evaluates, so no other rank may be waited for). The random state is the Evaluator's (evaluator.py).
"""

from __future__ import annotations

import copy
import inspect
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from trainer_core.agents.episodes import EpisodeEnvironment, episode_turns
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.config.stack import TRL_CHECKED
from trainer_core.environment.user_code import UserCodeError
from trainer_core.evaluation.engines import TRANSFORMERS, VLLM, not_usable

TRL_VERSIONS = TRL_CHECKED  # [first, last) TRL minor versions whose GRPOTrainer internals this module uses
TOOL_SUCCESS = "tool_success"
_MISSING = object()
_SWAPPED = (
    "environments",
    "_batch_environments",
    "_sync_tool_dicts",
    "_async_tool_dicts",
    "_metrics",
    "generation_config",
    "generation_kwargs",
    "use_vllm",
    "use_transformers_continuous_batching",
)


def check_trl_version(version: str | None = None) -> None:
    """ConfigError unless the installed TRL is one this module was written for."""
    from packaging.version import Version

    if version is None:
        import trl

        version = str(trl.__version__)
    first, last = TRL_VERSIONS
    if not Version(first) <= Version(Version(version).base_version) < Version(last):
        raise ConfigError(
            "eval_dataset",
            f"held-out evaluation of a run whose model calls tools plays its episodes through TRL's GRPOTrainer "
            f"internals as TRL {first}.x has them, and TRL {version} is installed: install trl>={first},<{last} "
            "(constraints.txt), or drop the held-out set (--eval-dataset/--eval-fraction, build_eval_dataset) for "
            "this run.",
        )


def tool_success(completions: list, environments=None) -> list[float]:
    """Per episode: 1.0 when it called a tool and every call came back without an error, else 0.0."""
    out = []
    for completion in completions:
        calls = [t for t in episode_turns(completion)[0] if t.get("tool")]
        ok = bool(calls) and not any("error" in t or t.get("unanswered") for t in calls)
        out.append(1.0 if ok else 0.0)
    return out


@dataclass
class Episodes:
    """Played episodes: each rollout's messages after the prompt, and its environment instance (None for a run
    whose tools are all standalone)."""

    completions: list[list[dict]]
    environments: list[EpisodeEnvironment] | None


class TrainerEpisodes:
    """Plays held-out episodes with a GRPOTrainer's generation and tool loop, and leaves the trainer as it was."""

    def __init__(self, trainer: Any, temperature: float, generations: int = 1):
        self.trainer = trainer
        self.temperature = temperature
        self.generations = generations  # each row comes this many times in a row (the eval's K)
        self.pool: list = []  # the eval's own environment instances, built with the trainer's factory, reused
        # a run that generates with vLLM plays its held-out episodes through its engine too (engines.py)
        self.engine = VLLM if getattr(trainer, "use_vllm", False) and not_usable(trainer) is None else TRANSFORMERS

    def __call__(self, rows: list[dict]) -> Episodes:
        trainer = self.trainer
        if getattr(trainer, "rollout_func", None) is not None:
            raise UserCodeError("held-out evaluation of an agentic run with a TRL rollout_func is not supported.")
        factories = trainer.environment_factories
        environments = None
        if factories is not None:
            if set(factories) != {None}:
                raise UserCodeError("held-out evaluation with several environment factories is not supported.")
            while len(self.pool) < len(rows):
                self.pool.append(factories[None]())
            environments = self.pool[: len(rows)]
        prompts = []
        for i, row in enumerate(rows):
            prompt = copy.deepcopy(row["prompt"])
            if environments is not None:
                observation = environments[i].reset(**row)  # as TRL resets a rollout: with the whole row
                if isinstance(observation, str):
                    prompt = [*prompt[:-1], {**prompt[-1], "content": prompt[-1]["content"] + observation}]
            prompts.append(prompt)
        with self._eval_mode(environments, len(rows)), self._engine_sampling():
            completions = trainer._generate(prompts)[3]
        return Episodes([list(c) for c in completions], environments)

    @contextmanager
    def _engine_sampling(self) -> Iterator[None]:
        """With vLLM: the engine samples at the eval temperature, K per row (server mode sends each row once with
        n=K), its prefix cache emptied before and after; the engine's settings are put back."""
        if self.engine != VLLM:
            yield
            return
        generation = self.trainer.vllm_generation
        saved = generation.temperature, self.trainer.num_generations_eval
        llm = getattr(generation, "llm", None) if generation.mode == "colocate" else None
        try:
            generation.temperature, self.trainer.num_generations_eval = self.temperature, self.generations
            if llm is not None:
                llm.reset_prefix_cache()
            yield
        finally:
            generation.temperature, self.trainer.num_generations_eval = saved
            if llm is not None:
                llm.reset_prefix_cache()

    def _tool_dicts(self, environments, count: int) -> tuple[list[dict], list[dict]]:
        """The tools of each rollout, as ``_generate_and_score_completions`` collects them."""
        sync, coroutines = [], []
        for i in range(count):
            methods = []
            if environments:
                environment = environments[i]
                methods = [
                    getattr(environment, name)
                    for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
                    if name not in ("reset", "get_reward") and not name.startswith("_")
                ]
            plain, awaited = {}, {}
            for tool in [*self.trainer._standalone_tools, *methods]:
                (awaited if inspect.iscoroutinefunction(tool) else plain)[tool.__name__] = tool
            sync.append(plain)
            coroutines.append(awaited)
        return sync, coroutines

    def _generation(self) -> tuple[Any, dict]:
        """The regular generate path's config at the eval temperature (built as TRL builds it when training
        generates with vLLM and has none)."""
        from transformers import GenerationConfig

        trainer = self.trainer
        kwargs = getattr(trainer, "generation_kwargs", None)
        if kwargs is None:
            tokenizer = trainer._tokenizer
            kwargs = {
                "max_new_tokens": trainer.max_completion_length,
                "do_sample": True,
                "pad_token_id": tokenizer.pad_token_id,
                "bos_token_id": tokenizer.bos_token_id,
                "eos_token_id": trainer.eos_token_ids,
                "top_p": trainer.top_p,
                "top_k": trainer.top_k,
                "min_p": trainer.min_p,
                "repetition_penalty": trainer.repetition_penalty,
                "cache_implementation": trainer.args.cache_implementation,
                **(trainer.args.generation_kwargs or {}),
            }
        kwargs = {**kwargs, "temperature": self.temperature}
        return GenerationConfig(**kwargs, disable_compile=True), kwargs

    @contextmanager
    def _eval_mode(self, environments, count: int) -> Iterator[None]:
        trainer = self.trainer
        saved = {name: trainer.__dict__.get(name, _MISSING) for name in _SWAPPED}
        gather = trainer.accelerator.__dict__.get("gather", _MISSING)
        report_to = trainer.args.report_to
        training = trainer.model.training
        tokens = trainer.state.num_input_tokens_seen
        sync, coroutines = self._tool_dicts(environments, count)
        config, kwargs = self._generation()
        try:
            trainer.environments = environments
            trainer._batch_environments = [None] * count
            trainer._sync_tool_dicts, trainer._async_tool_dicts = sync, coroutines
            trainer._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
            trainer.generation_config, trainer.generation_kwargs = config, kwargs
            trainer.use_vllm = self.engine == VLLM
            trainer.use_transformers_continuous_batching = False
            trainer.accelerator.gather = lambda tensor: tensor
            trainer.args.report_to = []
            trainer.model.eval()
            yield
        finally:
            trainer.model.train(training)
            trainer.args.report_to = report_to
            trainer.state.num_input_tokens_seen = tokens
            if gather is _MISSING:
                trainer.accelerator.__dict__.pop("gather", None)
            else:
                trainer.accelerator.gather = gather
            for name, value in saved.items():
                if value is _MISSING:
                    trainer.__dict__.pop(name, None)
                else:
                    setattr(trainer, name, value)


def eval_trainer(config: RunConfig, tokenizer, setup, model, build_args: Callable[[RunConfig, str], Any]) -> Any:
    """A GRPOTrainer for ``grpo-tui eval`` of an agentic run: the run's settings and tools around ``model``,
    built only to play episodes (no reference model, no vLLM, no trackers, nothing written). ``build_args``:
    trl_setup.build_grpo_config, the run's GRPOConfig."""
    import os
    import tempfile

    from trl import GRPOTrainer  # pyright: ignore[reportPrivateImportUsage]  # trl's public name

    plain = copy.deepcopy(config)
    plain.use_vllm = False
    plain.grpo_args = {**plain.grpo_args, "beta": 0.0, "report_to": "none", "use_vllm": False}
    if setup.factory is not None:
        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    with tempfile.TemporaryDirectory(prefix="grpo-tui-eval-") as scratch:
        return GRPOTrainer(
            model=model,
            reward_funcs=setup.funcs,
            args=build_args(plain, scratch),
            train_dataset=setup.dataset,
            processing_class=tokenizer,
            tools=setup.tools or None,
            environment_factory=setup.factory,
        )
