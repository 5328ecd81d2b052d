"""Room in TRL's colocated vLLM engine for a held-out eval's sequences, given as TRL starts the engine.

TRL starts its colocated engine with ``max_num_seqs`` = the per-device training batch (times the tensor-parallel
size and the steps per generation): all that a training step asks of it at once. A held-out eval asks for its
prompts times K samples at once (64 x 4 by default), and an engine that size runs them in waves of one training
batch. Measured on the tiny model on the CPU (``bench.eval_cost --engine vllm``), an eval of 64 prompts x 4
samples took 0.83 s in waves of 8 sequences, and 0.35 s in an engine with room for them all. So a run whose evals
go through its engine starts it with room for the eval's sequences, up to vLLM's own default for an offline engine
(:data:`MOST`). A training step asks for no more sequences than before, so it is scheduled as before.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

MOST = 256
"""The most sequences asked for: vLLM's default ``max_num_seqs`` for an ``LLM`` on a CPU and on GPUs under 70 GB
(larger ones default to 1024)."""

log = logging.getLogger(__name__)


@contextlib.contextmanager
def room_for(sequences: int) -> Iterator[None]:
    """While TRL builds its trainer, a colocated engine it starts runs up to ``sequences`` (at most :data:`MOST`)
    at once, if TRL would give it fewer."""
    from trl.generation import vllm_generation

    cls = vllm_generation.VLLMGeneration
    init = getattr(cls, "_init_vllm", None)
    if init is None:
        log.warning("this TRL starts its vLLM engine elsewhere: evals through it run in waves of the training batch")
        yield
        return
    wanted = min(sequences, MOST)

    def init_with_room(self) -> None:
        given = getattr(self, "max_num_seqs", None)
        if self.mode == "colocate" and given is not None and given < wanted:
            self.max_num_seqs = wanted
        init(self)

    cls._init_vllm = init_with_room
    try:
        yield
    finally:
        cls._init_vllm = init
