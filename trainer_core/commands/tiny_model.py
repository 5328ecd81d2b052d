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
from functools import partial
from pathlib import Path
from typing import cast

from trainer_core.commands.demo_prompts import INSTRUCTIONS, PRICES, REQUESTS, ROOMS

SPECIAL_TOKENS = ["<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<|unk|>"]

# Renders a whole tool-calling conversation (TRL's supports_tool_calling): each tool in one line (its name, its
# arguments' types and its description: a short prompt a 64-wide model can read), an assistant turn's tool calls as
# <tool_call>{"name": ..., "arguments": {...}}</tool_call> after its text, and a tool's answer as a <|tool|> turn.
# Prefix-preserving, as TRL's multi-turn training needs: a turn renders the same whatever follows it.
CHAT_TEMPLATE = (
    "{%- if tools %}<|system|>\nYou can call these tools:"
    "{%- for tool in tools %}{% set f = tool.function if tool.function is defined else tool %}"
    "{%- set props = f.parameters.properties if f.parameters is defined and f.parameters.properties is defined "
    "else {} %}{{ '\\n{' }}\"name\": {{ f.name | tojson }}, \"arguments\": {{ '{' }}"
    "{%- for key, prop in props.items() %}{{ key | tojson }}: {{ (prop.type if prop.type is defined else 'any') | tojson }}"
    "{%- if not loop.last %}, {% endif %}{% endfor %}{{ '}' }}"
    '{%- if f.description is defined and f.description %}, "description": {{ f.description | tojson }}{% endif %}'
    "{{ '}' }}{% endfor %}<|end|>\n{% endif %}"
    "{%- for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] or '' }}"
    "{%- for call in message['tool_calls'] or [] if message['tool_calls'] is defined %}"
    "{%- set call = call.function if call.function is defined else call %}"
    '<tool_call>{{ \'{\' }}"name": {{ call.name | tojson }}, "arguments": '
    "{%- if call.arguments is string %} {{ call.arguments }}{% else %} {{ (call.arguments or {}) | tojson }}{% endif %}"
    "{{ '}' }}</tool_call>{% endfor %}<|end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

# How transformers' tokenizer.parse_response reads a generated assistant turn back into a message (the
# response_template of transformers >= 5.13, saved with the tokenizer): text, then any <tool_call> JSON objects.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|assistant|>\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|end\|>\s*", "content": "text"},
    },
}

# A tool call's fixed parts, each one token (as <tool_call> is in Qwen's vocabulary), so that a call of the
# demo agent's tools is about a dozen tokens, few enough for a 64-wide model to learn from a few transcripts.
TOOL_CALL_TOKENS = [
    "<tool_call>",
    "</tool_call>",
    '{"name": "',
    '", "arguments": {',
    '"room": "',
    '", "nights": ',
    "}}",
]
TOOL_CALL_TOKENS += ["check_availability", "book_room"]  # the demo agent's tools
# The agent model's: its nights token ends before the space, so the number after it is the token the request has
# (" 7"), and copying the nights is copying one token (the default model's '", "nights": ' leaves "7", another one).
AGENT_TOOL_CALL_TOKENS = [t.rstrip() if t == '", "nights": ' else t for t in TOOL_CALL_TOKENS]

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


def build_tokenizer(vocab_size: int = 512, for_agent: bool = False):
    """Train a byte-level BPE tokenizer in memory and wrap it as a ``PreTrainedTokenizerFast`` (with the agent
    model's tool-call tokens when ``for_agent``)."""
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
    fast.add_tokens(AGENT_TOOL_CALL_TOKENS if for_agent else TOOL_CALL_TOKENS)
    fast.chat_template = CHAT_TEMPLATE
    fast.response_template = RESPONSE_TEMPLATE
    return fast


MARKER = ".grpo-tui-tiny-model"
FORMAT_VERSION = 4  # raise it whenever the weights change, so cached models are rebuilt
AGENT_FORMAT_VERSION = 1  # the same for the agent model alone

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


# The demo agent's hotel (grpo_tui/resources/demo/hotel_agent_env.py), as its transcripts show it: its rooms and
# requests are demo_prompts'; a test keeps the tool schemas equal to the environment's (transformers' get_json_schema).
AGENT_ROOMS, AGENT_PRICES, AGENT_REQUESTS = ROOMS, PRICES, REQUESTS
_ROOM_ARG = {"type": "string", "description": "The room type: cheap, large or city."}
AGENT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "check_availability",
            "description": "Say how many rooms of a type are free and what one night costs.",
            "parameters": {"type": "object", "properties": {"room": _ROOM_ARG}, "required": ["room"]},
            "return": {"type": "string"},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "book_room",
            "description": "Book a room for the guest.",
            "parameters": {
                "type": "object",
                "properties": {
                    "room": _ROOM_ARG,
                    "nights": {"type": "integer", "description": "How many nights the guest stays."},
                },
                "required": ["room", "nights"],
            },
            "return": {"type": "string"},
        },
    },
]
# What the transcripts do after a hotel request: mostly answer in words (so GRPO has tool use to discover), else
# call a tool, with the request's room and nights copied only some of the time (so it has accuracy to gain).
AGENT_TOOL_SHARE = 0.3
AGENT_CHECK_FIRST = 0.4  # of the transcripts that call a tool: check_availability before booking
AGENT_RIGHT_ROOM = 0.5
AGENT_RIGHT_NIGHTS = 0.5


def _call(name: str, **arguments) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def agent_transcripts(
    size: int,
    seed: int = 0,
    tool_share: float = AGENT_TOOL_SHARE,
    right_room: float = AGENT_RIGHT_ROOM,
    right_nights: float = AGENT_RIGHT_NIGHTS,
) -> list[list[dict]]:
    """Conversations of the demo agent's task in chat messages: a request, then an answer in words, or (a
    ``tool_share`` of them) tool calls with their results (what TRL writes back: the tool's text, or
    ``{'error': ...}``) and a closing sentence; a call asks for the requested room and nights with the odds given."""
    rng = random.Random(seed)
    out = []
    for _ in range(size):
        room, nights = rng.choice(AGENT_ROOMS), rng.randint(1, 7)
        free = {r: rng.randint(1, 3) for r in AGENT_ROOMS}
        free[rng.choice([r for r in AGENT_ROOMS if r != room])] = 0
        messages: list[dict] = [
            {"role": "user", "content": rng.choice(AGENT_REQUESTS).format(room=room, nights=nights)}
        ]
        if rng.random() >= tool_share:
            out.append([*messages, {"role": "assistant", "content": _sentence(rng)}])
            continue
        asked = room if rng.random() < right_room else rng.choice([r for r in AGENT_ROOMS if r != room])
        stay = nights if rng.random() < right_nights else rng.choice([n for n in range(1, 8) if n != nights])
        if rng.random() < AGENT_CHECK_FIRST:
            result = (
                f"{free[asked]} {asked} rooms free, {AGENT_PRICES[asked]} a night"
                if free[asked]
                else f"no {asked} room is free"
            )
            messages += [
                {"role": "assistant", "content": "", "tool_calls": [_call("check_availability", room=asked)]},
                {"role": "tool", "name": "check_availability", "content": result},
            ]
        if free[asked]:
            result = f"booked a {asked} room for {stay} nights, {AGENT_PRICES[asked] * stay} in all"
        else:
            result = str({"error": f"no {asked} room is free"})
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [_call("book_room", room=asked, nights=stay)]},
            {"role": "tool", "name": "book_room", "content": result},
            {"role": "assistant", "content": "the room is booked" if free[asked] else _sentence(rng)},
        ]
        out.append(messages)
    return out


def _padded(rows: list[list[int]], pad_id: int):
    import torch

    ids = torch.full((len(rows), max(map(len, rows))), pad_id)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
    mask = (ids != pad_id).long()
    return ids, mask, ids.masked_fill(mask == 0, -100)


def _chat_rows(tokenizer, transcripts: list[list[dict]]) -> list[list[int]]:
    return [
        tokenizer(
            tokenizer.apply_chat_template(messages, tools=AGENT_TOOLS, tokenize=False).removesuffix("\n"),
            add_special_tokens=False,
        )["input_ids"]
        for messages in transcripts
    ]


# The agent model's two phases of pre-training: first transcripts that all call a tool and always ask for the
# requested room and nights, for long enough that copying them is learned (it comes late, and then at once); then
# a short phase in which few transcripts call a tool, so that the model copies when it calls, but seldom calls.
# Calling is what its GRPO run learns, and it carries to requests the run never trained on.
AGENT_LEARN = {"steps": 500, "lr": 2e-2, "tool_share": 1.0}
AGENT_SETTLE = {"steps": 100, "lr": 3e-3, "tool_share": 0.15}
AGENT_BATCH_SIZE = 16


def _trimmed_loss(model, ids, mask, labels, pick):
    """The loss of the rows ``pick``, cut to the longest of them."""
    width = int(mask[pick].sum(dim=1).max())
    return model(input_ids=ids[pick, :width], attention_mask=mask[pick, :width], labels=labels[pick, :width]).loss


def _descend(model, loss, optimizer, schedule) -> None:
    import torch

    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()


def _rate(step: int, steps: int, decay: bool = True) -> float:
    """A warm-up over a tenth of the steps, then a linear decay to 5%; or constant."""
    return min(1.0, (step + 1) / max(1, steps // 10)) * max(0.05, 1 - step / steps) if decay else 1.0


def train_on_agent_transcripts(model, tokenizer, *, seed: int = 0) -> float:
    """Next-token training on :func:`agent_transcripts` alone, in the two phases ``AGENT_LEARN`` (warm-up and a
    linear decay) and ``AGENT_SETTLE`` (a constant rate); returns the last loss."""
    import torch

    generator = torch.Generator().manual_seed(seed + 1)
    model.train()
    loss = float("nan")
    for phase, phase_seed, decay in ((AGENT_LEARN, seed, True), (AGENT_SETTLE, seed + 3, False)):
        steps = int(phase["steps"])
        rows = _chat_rows(tokenizer, agent_transcripts(1000, phase_seed, phase["tool_share"], 1.0, 1.0))
        ids, mask, labels = _padded(rows, tokenizer.pad_token_id)
        optimizer = torch.optim.AdamW(model.parameters(), lr=phase["lr"], weight_decay=0.0)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, partial(_rate, steps=steps, decay=decay))
        for _ in range(steps):
            pick = torch.randint(0, len(rows), (AGENT_BATCH_SIZE,), generator=generator)
            out = _trimmed_loss(model, ids, mask, labels, pick)
            _descend(model, out, optimizer, schedule)
            loss = out.item()
    model.eval()
    return loss


def train_on_corpus(
    model,
    tokenizer,
    *,
    steps: int = 200,
    batch_size: int = 32,
    lr: float = 5e-3,
    seed: int = 0,
    agent_batch_size: int = 4,
) -> float:
    """Next-token training on :func:`pretraining_corpus` (each text ending in EOS) and, beside each of its batches,
    ``agent_batch_size`` of the :func:`agent_transcripts` rendered with the chat template and the hotel's tools
    (drawn by a generator of their own, so the pattern texts are drawn as they were without them); returns the
    last loss."""
    import torch

    rows = [tokenizer(text)["input_ids"] + [tokenizer.eos_token_id] for text in pretraining_corpus(4000, seed)]
    ids, mask, labels = _padded(rows, tokenizer.pad_token_id)
    agent_rows = _chat_rows(tokenizer, agent_transcripts(1000, seed))
    agent_ids, agent_mask, agent_labels = _padded(agent_rows, tokenizer.pad_token_id)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, partial(_rate, steps=steps))
    generator = torch.Generator().manual_seed(seed)
    agent_generator = torch.Generator().manual_seed(seed + 1)
    model.train()
    loss = float("nan")
    for _ in range(steps):
        batch = torch.randint(0, len(rows), (batch_size,), generator=generator)
        out = model(input_ids=ids[batch], attention_mask=mask[batch], labels=labels[batch])
        total = out.loss
        if agent_batch_size:
            pick = torch.randint(0, len(agent_rows), (agent_batch_size,), generator=agent_generator)
            total = total + _trimmed_loss(model, agent_ids, agent_mask, agent_labels, pick)
        _descend(model, total, optimizer, schedule)
        loss = out.loss.item()
    model.eval()
    return loss


VLLM_HIDDEN_SIZE = 128
"""The ``for_vllm`` variant's width: 4 heads of 32, since vLLM's CPU attention supports head_dim 32 and up (the
default model's 64 gives heads of 16, and vLLM's first generate on a CPU fails)."""


def _marker_text(pretrained: bool, for_vllm: bool = False, for_agent: bool = False) -> str:
    data: dict = {"format": FORMAT_VERSION, "pretrained": pretrained}
    if for_vllm:
        data["for_vllm"] = True
    if for_agent:
        data["for_agent"] = AGENT_FORMAT_VERSION
    return json.dumps(data) + "\n"


def is_built(
    output_dir: str | os.PathLike, *, pretrain: bool = False, for_vllm: bool = False, for_agent: bool = False
) -> bool:
    """Whether ``output_dir`` holds a complete model of this format and kind (random or pre-trained, for vLLM,
    for the agent demo)."""
    try:
        return (Path(output_dir) / MARKER).read_text() == _marker_text(pretrain, for_vllm, for_agent)
    except OSError:
        return False


def build_tiny_model(
    output_dir: str | os.PathLike,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    seed: int = 0,
    pretrain: bool = False,
    for_vllm: bool = False,
    for_agent: bool = False,
) -> Path:
    """Write a tiny causal LM and its tokenizer to ``output_dir``; return the folder.

    ``pretrain`` trains the random weights briefly (a few seconds on a CPU) so that the model writes words.
    Idempotent: a folder that already holds a complete model of the same kind and format is left as it is,
    so callers can cache it; any other content of the folder is overwritten. ``for_vllm`` builds it
    :data:`VLLM_HIDDEN_SIZE` wide, so that vLLM can serve it on a CPU. ``for_agent`` builds the agentic demo's
    model: pre-trained on the hotel agent's transcripts alone (:func:`train_on_agent_transcripts`, about a minute
    on a CPU), with the agent's tool-call tokens.
    """
    out = Path(output_dir)
    if is_built(out, pretrain=pretrain, for_vllm=for_vllm, for_agent=for_agent):
        return out
    if for_vllm:
        hidden_size = VLLM_HIDDEN_SIZE
    marker = out / MARKER
    marker.unlink(missing_ok=True)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    torch.manual_seed(seed)
    tokenizer = build_tokenizer(for_agent=for_agent)
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
    if pretrain and for_agent:
        train_on_agent_transcripts(model, tokenizer, seed=seed)
    elif pretrain:
        train_on_corpus(model, tokenizer, seed=seed)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    marker.write_text(_marker_text(pretrain, for_vllm, for_agent))
    return out
