"""The demo is what a new user sees first: its model writes words, and its run visibly learns without a warning.

The quick tests look at the pre-trained tiny model itself; the slow one runs ``grpo-tui demo`` from a cold cache
to its end, on the CPU, exactly as a user would, and checks that it learns, in training and on the held-out
prompts its evals score, and that the next demo finds the model it built.
"""

from __future__ import annotations

import importlib.util
import json
import re
from statistics import mean

import pytest

from grpo_tui.resources import demo_config_file, demo_env_file
from trainer_core.commands.tiny_model import MARKER, is_built
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import Eval, HealthWarning, Metrics, RunFinished
from trainer_core.contract.run.status import Status

from ..helpers import cli, events_of, only_run


def demo_env():
    spec = importlib.util.spec_from_file_location("demo_pattern_env", demo_env_file())
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def readable(text: str) -> bool:
    """Printable text with no replacement character: what a decoded completion of real words looks like."""
    flat = " ".join(text.split())
    return flat.isprintable() and "\ufffd" not in flat


def generate(model_dir: str, prompts: list[str], max_new_tokens: int, **sampling) -> list[tuple[str, bool]]:
    """(decoded completion, whether it ended with EOS) for each prompt."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    batch = tokenizer(prompts, return_tensors="pt", padding=True)
    out = model.generate(**batch, max_new_tokens=max_new_tokens, **sampling)
    rows = [row[batch["input_ids"].shape[1] :].tolist() for row in out]
    return [(tokenizer.decode(row, skip_special_tokens=True), tokenizer.eos_token_id in row) for row in rows]


def test_the_pretrained_model_writes_words_and_ends_them(pretrained_tiny_model):
    import torch

    env = demo_env()
    prompts = env.pattern_prompts("a", 8)
    max_new_tokens = RunConfig.load(demo_config_file()).rl_max_new_tokens
    greedy = generate(pretrained_tiny_model, prompts, max_new_tokens, do_sample=False)
    assert sum(ended for _, ended in greedy) >= 4, greedy
    torch.manual_seed(0)
    sampled = generate(pretrained_tiny_model, prompts, max_new_tokens, do_sample=True, num_return_sequences=4)
    assert all(readable(text) for text, _ in sampled + greedy), sampled + greedy
    assert sum(ended for _, ended in sampled) >= 0.9 * len(sampled), sampled
    words = " ".join(text for text, _ in sampled).split()
    assert sum(bool(re.fullmatch("[a-z]+", w)) for w in words) >= 0.9 * len(words), words
    # the demo's task is left to GRPO: most answers are sentences, not rows of "a"
    assert mean(env.target_fraction(text, "a") for text, _ in sampled) < 0.3, sampled
    assert is_built(pretrained_tiny_model, pretrain=True) and not is_built(pretrained_tiny_model, pretrain=False)


def test_a_model_of_an_older_format_is_not_taken_for_a_current_one(tmp_path):
    (tmp_path / MARKER).write_text("complete\n")  # what the first version wrote
    assert not is_built(tmp_path, pretrain=True) and not is_built(tmp_path, pretrain=False)


@pytest.mark.slow
def test_the_default_demo_learns_without_a_warning(tmp_path):
    cache = tmp_path / "cache" / "grpo-tui" / "tiny-model"
    cache.mkdir(parents=True)
    (cache / MARKER).write_text("complete\n")  # a random model cached by an older version: rebuilt, not reused
    runs = tmp_path / "runs"
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = cli("demo", "--runs-dir", str(runs), env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "building the tiny demo model" in result.stdout and "run completed" in result.stdout

    folder = only_run(runs)
    events = events_of(folder)
    steps = [e for e in events if isinstance(e, Metrics)]
    max_steps = RunConfig.load(demo_config_file()).max_steps
    assert [e.step for e in steps] == list(range(1, max_steps + 1))
    rewards = [e.values["reward"] for e in steps]
    first, last = mean(rewards[:20]), mean(rewards[-20:])
    assert last >= 0.6 and last >= 3 * first, (first, last)
    warnings = [(e.rule, e.step, e.message) for e in events if isinstance(e, HealthWarning)]
    assert not warnings, warnings
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status is Status.COMPLETED
    evals = [e for e in events if isinstance(e, Eval)]
    config = RunConfig.load(demo_config_file())
    assert [e.step for e in evals] == [*range(0, max_steps, config.eval_steps or max_steps), max_steps]
    assert evals[0].base and evals[0].task_metrics == ["wrote_target"]
    assert evals[-1].value("wrote_target") > evals[0].value("wrote_target")  # the held-out counts are obeyed too
    assert "held-out (16 prompts x 4): wrote_target" in result.stdout

    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    at_start = [s["completion"] for s in samples if s["step"] == 1]
    at_end = [s["completion"] for s in samples if s["step"] == max_steps]
    assert at_start and at_end
    assert all(readable(text) for text in at_start + at_end), at_start + at_end
    # sentences of words at first, rows of the target letter at the end
    assert sum(len(set(text.split()) - {"a", "aa", "aaa"}) >= 2 for text in at_start) >= len(at_start) // 2, at_start
    assert sum(bool(re.search("[a-z]", text)) for text in at_end) >= len(at_end) // 2, at_end

    # the model is built once: the next demo finds it in the cache
    again = cli("demo", "--max-steps", "1", "--runs-dir", str(tmp_path / "runs2"), env=env)
    assert again.returncode == 0 and "step 1/1" in again.stdout, again.stdout + again.stderr
    assert "building the tiny demo model" not in again.stdout
