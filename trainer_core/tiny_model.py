"""A tiny causal language model built entirely offline.

Tests, the demo and the examples need a real ``from_pretrained``-loadable model and tokenizer, but nothing
may be downloaded at run time. This module trains a small BPE tokenizer in code, gives it a chat template
(with tool schemas), and saves a randomly initialised Llama-architecture model next to it. GRPO on it runs
at several steps a second on a CPU, which is what makes real end-to-end training tests possible.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

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


def build_tiny_model(output_dir: str | os.PathLike, *, hidden_size: int = 64, num_layers: int = 2, seed: int = 0) -> Path:
    """Write a random tiny causal LM and its tokenizer to ``output_dir``; return the folder.

    Idempotent: a folder that already holds a complete model is left as it is, so callers can cache it.
    """
    out = Path(output_dir)
    marker = out / ".grpo-tui-tiny-model"
    if marker.exists():
        return out
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
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    marker.write_text("complete\n")
    return out
