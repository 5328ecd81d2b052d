"""A run whose held-out evals go through its colocated vLLM engine starts that engine with room for an eval's
sequences (TRL sizes it for one training batch): on TRL's own ``VLLMGeneration``, the count it starts the engine
with is raised, never lowered, capped at vLLM's default, left alone in server mode, and restored afterwards. The
engine's start itself needs vLLM (tests/integration/test_vllm_evals.py times an eval through it)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from trl.generation.vllm_generation import VLLMGeneration, is_vllm_available

from trainer_core.contract.config.run_config import RunConfig
from trainer_core.evaluation.evaluator import Evaluator
from trainer_core.evaluation.heldout import HeldOut
from trainer_core.generation.colocated_engine import MOST, room_for

pytestmark = pytest.mark.skipif(is_vllm_available(), reason="the engine would start: see test_vllm_evals.py")


def started_with(sequences: int, mode: str = "colocate", given: int | None = 8) -> int | None:
    """``max_num_seqs`` as TRL's ``_init_vllm`` finds it (it stops at the missing vLLM, after the room is made)."""
    generation = SimpleNamespace(mode=mode, max_num_seqs=given, model=None, accelerator=None)
    with room_for(sequences), pytest.raises(ImportError, match="vLLM is not available"):
        VLLMGeneration._init_vllm(generation)
    return generation.max_num_seqs


def test_the_engine_gets_room_for_the_evals_sequences():
    assert started_with(80) == 80
    assert started_with(10_000) == MOST


def test_room_is_never_taken_from_the_training_batch_nor_given_to_a_server():
    assert started_with(4, given=8) == 8
    assert started_with(80, mode="server") == 8
    assert started_with(80, given=None) is None  # vLLM's own default


def test_trl_is_left_as_it_was():
    init = VLLMGeneration._init_vllm
    with room_for(80):
        assert VLLMGeneration._init_vllm is not init
    assert VLLMGeneration._init_vllm is init


@pytest.mark.parametrize(("temperature", "expected"), [(None, 12 * 4), (0.0, 12), (0.9, 12 * 4)])
def test_an_eval_asks_for_k_samples_of_each_prompt_or_one_if_greedy(temperature, expected):
    config = RunConfig(model="m", eval_generations=4, eval_max_prompts=12)
    evaluator = Evaluator(config, None, HeldOut(rows=[{"prompt": f"p{i}"} for i in range(30)], source="test"))
    evaluator.temperature = temperature
    assert evaluator.sequences == expected
