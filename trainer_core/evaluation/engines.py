"""Where an eval's samples come from: the model's own ``generate`` (``transformers``) or a vLLM engine (``vllm``).

A run that generates with vLLM evaluates with it too: its colocated engine (``colocated``), its server
(``served``), or the engine ``grpo-tui eval --engine vllm`` starts once for every checkpoint it scores. Whatever
the engine, an eval samples with its own settings (:class:`Sampling`): ``eval_generations`` samples per prompt at
``eval_temperature``, the run's max new tokens, top-p and top-k, and the run's seed, so an eval is reproducible
and never borrows the training's sampling. Temperature 0 is greedy on both engines.

A colocated engine is brought to the weights of the step being evaluated before it samples (TRL's own sync,
or the CPU build's, with TRL's bookkeeping of the synced step, so the next training step does not sync the same
weights again), and the step it holds is checked, not assumed: an engine behind the model is an error. Its
prefix cache is emptied before and after, so neither the training's prompts nor the eval's leak into the other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import EVAL_ENGINES
from trainer_core.environment.user_env import prompt_text

ENGINES = EVAL_ENGINES
VLLM, TRANSFORMERS = EVAL_ENGINES


@dataclass(frozen=True)
class Sampling:
    """An eval's sampling: ``k`` completions per prompt; ``temperature`` 0 is greedy."""

    k: int
    temperature: float
    top_p: float
    top_k: int
    max_tokens: int
    seed: int

    @classmethod
    def of(cls, config: RunConfig, temperature: float | None = None, k: int | None = None) -> Sampling:
        return cls(
            k=config.eval_generations if k is None else k,
            temperature=config.eval_temperature if temperature is None else temperature,
            top_p=config.rl_top_p,
            top_k=config.rl_top_k or 0,
            max_tokens=config.rl_max_new_tokens,
            seed=config.seed,
        )


def _greedy_once(sampling: Sampling) -> tuple[int, Sampling]:
    """(K, what to ask the engine for): greedy decoding gives one answer per prompt, and neither engine samples it
    K times (vLLM wants n=1, transformers one return sequence), so it is asked once and repeated K times."""
    return sampling.k, replace(sampling, k=1) if sampling.temperature <= 0 else sampling


class TransformersEngine:
    """The model's own ``generate``, on the process that calls it (base + adapter for LoRA), ``eval_batch_size``
    prompts at a time."""

    name = TRANSFORMERS
    batches_itself = False

    def generate(self, model, tokenizer, prompts: list[Any], sampling: Sampling) -> list[str]:
        """``k`` completions of each prompt, prompt by prompt (prompt i's at [i*k, (i+1)*k))."""
        import torch

        k, sampling = _greedy_once(sampling)
        texts = [prompt_text(p, tokenizer) for p in prompts]
        inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        greedy = sampling.temperature <= 0
        options: dict[str, Any] = {"do_sample": False, "top_p": None, "top_k": None, "temperature": None}
        if not greedy:
            options = {
                "do_sample": True,
                "temperature": sampling.temperature,
                "top_p": sampling.top_p,
                "top_k": sampling.top_k or None,
            }
        with torch.no_grad():
            out = model.generate(
                **inputs,
                **options,
                max_new_tokens=sampling.max_tokens,
                num_return_sequences=sampling.k,
                pad_token_id=tokenizer.pad_token_id,
            )
        decoded = tokenizer.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        return [t for t in decoded for _ in range(k // sampling.k)]


class VLLMEngine:
    """Samples through a vLLM ``LLM`` in this process (``llm``) or a TRL ``VLLMClient`` (``client``, server mode).
    ``ready``: called before each batch, brings the engine to the model's weights (a colocated run's sync). It
    takes the whole held-out set at once and schedules it by its own KV cache (``batches_itself``): measured on
    the tiny model on the CPU, in batches of 8 prompts it is no faster than transformers, all at once 1.5-2x."""

    name = VLLM
    batches_itself = True

    def __init__(
        self,
        llm=None,
        client=None,
        ready: Callable[[], None] | None = None,
        done: Callable[[], None] | None = None,
    ):
        if (llm is None) == (client is None):
            raise ValueError("a vLLM eval engine needs an LLM or a server client")
        self.llm, self.client, self.ready, self.done = llm, client, ready, done
        # vLLM's CPU build cannot take a seeded request whose prefill the scheduler splits ("CPU Generator does not
        # use offset"): there the set goes in parts that fit the step's token budget whole (the same samples: each
        # request has its own seeded generator)
        self.part_tokens = CPU_PART_TOKENS if llm is not None and _cpu_build() else None

    def generate(self, model, tokenizer, prompts: list[Any], sampling: Sampling) -> list[str]:
        ids = [tokenizer(prompt_text(p, tokenizer), add_special_tokens=False)["input_ids"] for p in prompts]
        k, sampling = _greedy_once(sampling)
        if self.ready is not None:
            self.ready()
        try:
            if self.llm is not None:
                completions = self._llm(self.llm, ids, sampling, self.part_tokens)
            else:
                completions = self._served(ids, sampling)
        finally:
            if self.done is not None:
                self.done()
        return [
            t for t in tokenizer.batch_decode(completions, skip_special_tokens=True) for _ in range(k // sampling.k)
        ]

    @staticmethod
    def _llm(llm, ids: list[list[int]], sampling: Sampling, part_tokens: int | None = None) -> list[list[int]]:
        from vllm import SamplingParams  # pyright: ignore[reportMissingImports]  # the vllm extra

        greedy = sampling.temperature <= 0
        params = SamplingParams(
            n=sampling.k,
            temperature=0.0 if greedy else sampling.temperature,
            top_p=1.0 if greedy else sampling.top_p,
            top_k=0 if greedy else sampling.top_k,
            max_tokens=sampling.max_tokens,
            seed=sampling.seed,
        )
        llm.reset_prefix_cache()
        outputs = []
        try:
            for part in parts(ids, sampling.k, part_tokens):
                requests = [{"prompt_token_ids": i} for i in part]
                outputs += llm.generate(requests, sampling_params=params, use_tqdm=False)
        finally:
            llm.reset_prefix_cache()
        return [list(o.token_ids) for request in outputs for o in request.outputs]

    def _served(self, ids: list[list[int]], sampling: Sampling) -> list[list[int]]:
        client = self.client
        assert client is not None  # one of the two, checked when built
        greedy = sampling.temperature <= 0
        client.reset_prefix_cache()
        try:
            out = client.generate(
                prompts=ids,
                n=sampling.k,
                temperature=0.0 if greedy else sampling.temperature,
                top_p=1.0 if greedy else sampling.top_p,
                top_k=0 if greedy else sampling.top_k,
                max_tokens=sampling.max_tokens,
                generation_kwargs={"seed": sampling.seed},
            )
        finally:
            client.reset_prefix_cache()
        return [list(c) for c in out["completion_ids"]]


CPU_PART_TOKENS = 2048
"""Prompt tokens (times K) per request on vLLM's CPU build: half the 4096-token step budget TRL's engine and
``grpo-tui eval``'s are started with, so a part's prefill is never split."""


def _cpu_build() -> bool:
    from trainer_core.generation.vllm_cpu_sync import is_cpu_build, vllm_version

    return is_cpu_build(vllm_version())


def parts(ids: list[list[int]], k: int, budget: int | None) -> list[list[list[int]]]:
    """``ids`` in order, in parts of at most ``budget`` prompt tokens times ``k`` (a longer prompt alone); one part
    without a budget."""
    if budget is None:
        return [ids] if ids else []
    out: list[list[list[int]]] = []
    size = 0
    for prompt in ids:
        cost = len(prompt) * k
        if out and size + cost <= budget:
            out[-1].append(prompt)
            size += cost
        else:
            out.append([prompt])
            size = cost
    return out


class StaleEngine(RuntimeError):
    """The engine does not hold the weights of the step being evaluated."""


def not_usable(trainer) -> str | None:
    """Why rank 0 alone cannot sample from the run's engine (None: it can). Only rank 0 evaluates, so a sync that
    gathers sharded weights (DeepSpeed ZeRO-3, FSDP) or an engine split across ranks (colocate tensor parallelism)
    would wait for ranks that are not there."""
    generation = getattr(trainer, "vllm_generation", None)
    if generation is None:
        return "the trainer has no vLLM engine"
    dist = getattr(generation, "_dist", None)
    if getattr(dist, "is_zero3", False) or getattr(dist, "is_fsdp", False):
        return "the model is sharded (ZeRO-3 or FSDP): its weights reach the engine only with every rank"
    if generation.mode == "colocate" and getattr(generation, "tensor_parallel_size", 1) > 1:
        return "the colocated engine spans several ranks (vllm_tensor_parallel_size > 1)"
    return None


def of_trainer(trainer) -> VLLMEngine:
    """The run's own engine (``--use-vllm``, colocate or server), brought to the trainer's current weights before
    each batch (``not_usable`` says where it cannot be). In server mode the weights are pushed to the server as
    TRL pushes them."""
    generation = trainer.vllm_generation

    sleeps = generation.mode == "colocate" and getattr(generation, "enable_sleep_mode", False)

    def ready() -> None:
        step = trainer.state.global_step
        if getattr(generation, "_llm_weights_sleeping", False) or trainer._last_loaded_step != step:
            generation.sync_weights()  # wakes a sleeping engine's weights first, as TRL's generate does
            trainer._last_loaded_step = step
            generation._llm_weights_sleeping = False
        if trainer._last_loaded_step != step:
            raise StaleEngine(f"the vLLM engine holds the weights of step {trainer._last_loaded_step}, not {step}")
        if sleeps:
            generation.llm.wake_up(tags=["kv_cache"])

    def done() -> None:  # a sleeping engine goes back to sleep, as after a training generation
        if sleeps:
            generation.llm.sleep(level=2)
            generation._llm_weights_sleeping = True

    if generation.mode == "server":
        return VLLMEngine(client=generation.vllm_client, ready=ready)
    return VLLMEngine(llm=generation.llm, ready=ready, done=done)
