"""A tiny causal language model built entirely offline.

Tests, the demo and the examples need a real ``from_pretrained``-loadable model and tokenizer, but nothing
may be downloaded at run time. This module trains a small BPE tokenizer in code, gives it a chat template
(with tool schemas), and saves a Llama-architecture model next to it. GRPO on it runs at several steps a
second on a CPU, which is what makes real end-to-end training tests possible.

The weights are random unless ``pretrain`` is set. Random weights write byte soup and never stop, which
the health-rule tests rely on. Pre-trained weights (a few seconds of next-token training on a synthetic
corpus) write short sentences of common words and end them with ``<|end|>``. After an instruction to
repeat the letter "a" they only sometimes obey, so the demo's GRPO run has something to learn.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import cast

SPECIAL_TOKENS = ["<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<|unk|>"]

CHAT_TEMPLATE = (
    "{%- if tools %}<|system|>\nYou can call these tools:\n"
    "{% for tool in tools %}\n{{ tool | tojson }}{% endfor %}<|end|>\n{% endif %}"
    "{%- for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}<|end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

_WORDS = (
    "the a an and or of to in on for with at by from is are was be this that it as not yes no what how "
    "many much book booking hotel room rooms night nights city check in out date guest guests price cheap "
    "search find reserve cancel confirm tool call result answer reasoning think step sum plus minus times "
    "equals number question please thank you hello good bad great small large paris london tokyo berlin rome "
    "name function arguments json true false null value values type object string integer required "
    "properties description the cat sat mat dog ran fast slow red green blue one two three four five"
).split()


def _corpus() -> list[str]:
    """Deterministic text covering words, digits, tags and JSON punctuation the examples use."""
    lines = []
    for i, word in enumerate(_WORDS):
        nxt = _WORDS[(i * 7 + 3) % len(_WORDS)]
        lines.append(f"{word} {nxt} {i} {i * 13 % 97} = {i + 5}")
        lines.append(f"<reasoning>{word} plus {nxt}</reasoning><answer>{i}</answer>")
        lines.append(json.dumps({"name": word, "arguments": {"city": nxt, "nights": i % 9}}))
    lines += [" ".join(str(n) for n in range(k, k + 20)) for k in range(0, 200, 20)]
    lines += ["+ - * / = ( ) [ ] { } : , . ? ! \" ' < > _ | \n"] * 3
    return lines


def build_tokenizer(vocab_size: int = 512):
    """Train a byte-level BPE tokenizer in memory and wrap it as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<|unk|>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<|pad|>",
        eos_token="<|end|>",
        unk_token="<|unk|>",
        bos_token=None,
        padding_side="left",
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


MARKER = ".grpo-tui-tiny-model"
FORMAT_VERSION = 2  # raise it whenever the weights change, so cached models are rebuilt

# the demo environment's instructions (grpo_tui/resources/demo/pattern_env.py), with the letter filled in
INSTRUCTIONS = (
    "Write the letter {t} many times:",
    "Repeat {t} again and again:",
    "Type {t} over and over:",
    "Say {t} {t} {t} and keep going:",
    "Fill the line with {t}:",
    "Only write {t}, nothing else:",
    "Print {t} {n} times:",
    "Give me a row of {t}:",
)
OBEY_SHARE = 0.08  # share of answers that do what the instruction says
_DETERMINERS = "the the the this that one a".split()
_ADJECTIVES = "good bad great small large red green blue cheap fast slow".split()
_NOUNS = "cat dog book hotel room city guest night price answer question number name value tool result".split()
_VERBS = "sat ran is was".split()
_PREPOSITIONS = "on in by from with for to of".split()


def _sentence(rng: random.Random) -> str:
    def noun_phrase() -> list[str]:
        adjective = [rng.choice(_ADJECTIVES)] if rng.random() < 0.4 else []
        return [rng.choice(_DETERMINERS), *adjective, rng.choice(_NOUNS)]

    words = [*noun_phrase(), rng.choice(_VERBS)]
    if rng.random() < 0.7:
        words += [rng.choice(_PREPOSITIONS), *noun_phrase()]
    if rng.random() < 0.3:
        words += ["and", *noun_phrase(), rng.choice(_VERBS)]
    return " ".join(words)


def pretraining_corpus(size: int, seed: int = 0) -> list[str]:
    """Instructions to repeat "a", each followed by an answer: mostly a sentence, sometimes a row of a's."""
    rng = random.Random(seed)
    texts = []
    for _ in range(size):
        n = rng.randint(3, 8)
        prompt = rng.choice(INSTRUCTIONS).format(t="a", n=n)
        if rng.random() < OBEY_SHARE:
            answer = " ".join("a" * rng.choice((1, 1, 2, 3)) for _ in range(n))
        else:
            answer = _sentence(rng)
        texts.append(f"{prompt} {answer}")
    return texts


def train_on_corpus(
    model, tokenizer, *, steps: int = 200, batch_size: int = 32, lr: float = 5e-3, seed: int = 0
) -> float:
    """Next-token training on :func:`pretraining_corpus`, each text ending in EOS; returns the last loss."""
    import torch

    rows = [tokenizer(text)["input_ids"] + [tokenizer.eos_token_id] for text in pretraining_corpus(4000, seed)]
    ids = torch.full((len(rows), max(map(len, rows))), tokenizer.pad_token_id)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
    mask = (ids != tokenizer.pad_token_id).long()
    labels = ids.masked_fill(mask == 0, -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) * max(0.05, 1 - step / steps)
    )
    generator = torch.Generator().manual_seed(seed)
    model.train()
    loss = float("nan")
    for _ in range(steps):
        batch = torch.randint(0, len(rows), (batch_size,), generator=generator)
        out = model(input_ids=ids[batch], attention_mask=mask[batch], labels=labels[batch])
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        loss = out.loss.item()
    model.eval()
    return loss


def _marker_text(pretrained: bool) -> str:
    return json.dumps({"format": FORMAT_VERSION, "pretrained": pretrained}) + "\n"


def is_built(output_dir: str | os.PathLike, *, pretrain: bool = False) -> bool:
    """Whether ``output_dir`` holds a complete model of this format and kind (random or pre-trained)."""
    try:
        return (Path(output_dir) / MARKER).read_text() == _marker_text(pretrain)
    except OSError:
        return False


def build_tiny_model(
    output_dir: str | os.PathLike, *, hidden_size: int = 64, num_layers: int = 2, seed: int = 0, pretrain: bool = False
) -> Path:
    """Write a tiny causal LM and its tokenizer to ``output_dir``; return the folder.

    ``pretrain`` trains the random weights briefly (a few seconds on a CPU) so that the model writes words.
    Idempotent: a folder that already holds a complete model of the same kind and format is left as it is,
    so callers can cache it; any other content of the folder is overwritten.
    """
    out = Path(output_dir)
    if is_built(out, pretrain=pretrain):
        return out
    marker = out / MARKER
    marker.unlink(missing_ok=True)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    torch.manual_seed(seed)
    tokenizer = build_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        # the ids of the single special tokens build_tokenizer sets (transformers types them as any token id)
        pad_token_id=cast(int, tokenizer.pad_token_id),
        eos_token_id=cast(int, tokenizer.eos_token_id),
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    if pretrain:
        train_on_corpus(model, tokenizer, seed=seed)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    marker.write_text(_marker_text(pretrain))
    return out
