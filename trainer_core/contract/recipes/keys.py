"""Recipe keys that TRL, transformers or open-r1 removed or renamed, and the keys of open-r1's own scripts.

The most copied GRPO recipes are open-r1's of early 2025, written for TRL 0.14-0.15: they carry keys that TRL
has since renamed (``torch_dtype``, ``warmup_ratio``), keys that no longer do anything (``vllm_device``) and
keys that only open-r1's own script ever read (``system_prompt``, ``dataset_configs``). Refusing them as
unknown makes a key that moved on look like a typo. This table says, for each one, what it became and in
which release, so a recipe of any vintage reads with a note per such key (and ``--strict`` turns every
ignored one into an error). It is the one source: ``trl_recipe`` reads recipes with it, ``trl_export``
writes none of these keys, and ``docs/recipes.md`` lists it (a unit test compares the two).

Stdlib only, like the rest of the contract layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["renamed", "honoured", "ignored"]


@dataclass(frozen=True)
class RetiredKey:
    """One recipe key that current TRL does not have, and what grpo-tui does with it."""

    key: str
    """The key as old recipes spell it."""
    origin: str
    """Whose key it is: TRL, transformers (TrainingArguments), open-r1 or accelerate."""
    kind: Kind
    """``renamed``: read as the current recipe key ``becomes``, value unchanged. ``honoured``: no trl grpo key does
    it, but the grpo-tui field ``becomes`` does. ``ignored``: it has no effect any more; reported by name."""
    release: str
    """The release that changed it, as a phrase that reads in parentheses after the key."""
    reason: str
    """Why, and what to do instead: shown to the user with the key."""
    becomes: str = ""
    """The current recipe key (renamed) or grpo-tui field (honoured) it is read as."""
    no_op: tuple[Any, ...] = ()
    """Values that ask for nothing (the key's old default): an ignored key with one of them passes silently."""
    instead: str = ""
    """For a honoured key: what to do under plain ``trl grpo``, which has no key for it (``grpo-tui export``)."""


_SERVER = "TRL 0.16: no effect since, removed in 0.18"
_OPEN_R1 = "open-r1's own script argument, never a TRL key"
_HUB = "open-r1 pushes checkpoints to Hub revisions; grpo-tui does not push to the Hub: upload RUN/final yourself"
_REWARD = (
    "it sets up one of open-r1's own reward functions (open_r1.rewards), which grpo-tui does not ship; name "
    "your reward function in reward_funcs and give it the value there"
)
_WANDB = (
    "open-r1 exports it as the environment variable of the same name in capitals (WANDB_PROJECT, ...); set that "
    "variable in the shell that starts grpo-tui"
)


def _reward_arg(key: str, default: Any) -> RetiredKey:
    return RetiredKey(key, "open-r1", "ignored", _OPEN_R1, _REWARD, no_op=(default,))


def _wandb_arg(key: str) -> RetiredKey:
    return RetiredKey(key, "open-r1", "ignored", _OPEN_R1, _WANDB, no_op=(None,))


RETIRED_KEYS: tuple[RetiredKey, ...] = (
    # TRL: the in-trainer vLLM of TRL 0.14-0.15 gave way to `trl vllm-serve` (0.16) and colocate mode (0.18)
    RetiredKey(
        "vllm_device",
        "TRL",
        "ignored",
        _SERVER,
        "vLLM no longer runs on a GPU of its own inside the trainer: TRL 0.16 moved generation to a "
        "`trl vllm-serve` server and 0.18 added vllm_mode colocate (on the training GPUs); grpo-tui places vLLM "
        "from use_vllm, vllm_mode and --vllm-server-gpus",
        no_op=(None,),
    ),
    RetiredKey(
        "vllm_dtype",
        "TRL",
        "ignored",
        _SERVER,
        "vLLM generates in the model's dtype; a server takes --dtype from trl vllm-serve",
        no_op=(None,),
    ),
    RetiredKey(
        "vllm_enable_prefix_caching",
        "TRL",
        "ignored",
        _SERVER,
        "a server takes it from trl vllm-serve (--enable_prefix_caching); colocated vLLM uses TRL's setting",
        no_op=(None,),
    ),
    RetiredKey(
        "vllm_max_model_len",
        "TRL",
        "renamed",
        "TRL 0.16 removed it, a later TRL added vllm_max_model_length",
        "the context window of the colocated vLLM engine (a server takes --max_model_len)",
        becomes="vllm_max_model_length",
    ),
    RetiredKey(
        "vllm_guided_decoding_regex",
        "TRL",
        "renamed",
        "TRL 1.7, after vLLM renamed guided decoding to structured outputs",
        "the regex that constrains vLLM's completions",
        becomes="vllm_structured_outputs_regex",
    ),
    RetiredKey(
        "use_liger_loss",
        "TRL",
        "renamed",
        "TRL 0.28, deprecated in 0.25",
        "the Liger GRPO loss is switched on with use_liger_kernel",
        becomes="use_liger_kernel",
    ),
    RetiredKey(
        "wandb_log_unique_prompts",
        "TRL, open-r1",
        "renamed",
        "TRL 0.28",
        "log each prompt once in the completions table, for every tracker",
        becomes="log_unique_prompts",
    ),
    RetiredKey(
        "max_prompt_length",
        "TRL",
        "honoured",
        "removed from GRPOConfig in TRL 0.28, deprecated in 0.25",
        "grpo-tui drops the prompts longer than that; older TRL cut them to that length",
        becomes="max_prompt_length",
        instead="filter the long prompts out of the dataset",
    ),
    # transformers (TrainingArguments, which GRPOConfig extends) and its model loading
    RetiredKey(
        "torch_dtype",
        "transformers",
        "renamed",
        "transformers 4.56; TRL's ModelConfig followed",
        "the dtype the model is loaded in",
        becomes="dtype",
    ),
    RetiredKey(
        "warmup_ratio",
        "transformers",
        "renamed",
        "deprecated in transformers 5.0, removed in 5.15",
        "a warmup_steps below 1 is that fraction of the training steps",
        becomes="warmup_steps",
    ),
    RetiredKey(
        "evaluation_strategy",
        "transformers",
        "renamed",
        "transformers 4.46, deprecated in 4.41",
        "the same setting under its current name",
        becomes="eval_strategy",
    ),
    RetiredKey(
        "overwrite_output_dir",
        "transformers",
        "ignored",
        "transformers 5.0",
        "grpo-tui writes every run to a new folder (RUN/checkpoints, RUN/final)",
        no_op=(False,),
    ),
    RetiredKey(
        "logging_dir",
        "transformers",
        "ignored",
        "deprecated in transformers 5.0, removed in 5.15",
        "TensorBoard writes to RUN/tensorboard (TENSORBOARD_LOGGING_DIR, set before the run, wins)",
        no_op=(None,),
    ),
    # open-r1's GRPOScriptArguments and GRPOConfig (src/open_r1/configs.py), and what its recipes carried
    RetiredKey(
        "dataset_configs",
        "open-r1",
        "renamed",
        "open-r1 recipes, until March 2025 (open-r1 PR #461)",
        "open-r1's script never read it and loaded the dataset's default configuration; one name is taken "
        "as dataset_config, 'all' as that default",
        becomes="dataset_config",
    ),
    RetiredKey(
        "dataset_prompt_column",
        "open-r1",
        "honoured",
        _OPEN_R1,
        "the column is renamed to 'prompt', as open-r1 does",
        becomes="prompt_column",
        instead="rename the dataset's column to 'prompt'",
    ),
    RetiredKey(
        "system_prompt",
        "open-r1",
        "honoured",
        _OPEN_R1,
        "every prompt becomes a chat that starts with this system message, as open-r1 does",
        becomes="system_prompt",
        instead="put the system message into the dataset's prompts",
    ),
    RetiredKey(
        "chat_template",
        "open-r1",
        "ignored",
        _OPEN_R1,
        "grpo-tui renders prompts with the model's own chat template: to train with this one, set it on the "
        "tokenizer (tokenizer.chat_template = ...), save_pretrained, and train that folder",
        no_op=(None,),
    ),
    RetiredKey(
        "callbacks",
        "open-r1",
        "ignored",
        _OPEN_R1,
        "open-r1's callbacks push checkpoints to the Hub; grpo-tui runs its own callbacks and does not push",
        no_op=(None,),
    ),
    RetiredKey(
        "benchmarks",
        "open-r1",
        "ignored",
        _OPEN_R1,
        "open-r1 runs lighteval benchmarks after training; evaluate RUN/final yourself",
        no_op=(None,),
    ),
    RetiredKey("hub_model_revision", "open-r1", "ignored", _OPEN_R1, _HUB, no_op=("main",)),
    RetiredKey("push_to_hub_revision", "open-r1", "ignored", _OPEN_R1, _HUB, no_op=(False,)),
    RetiredKey("overwrite_hub_revision", "open-r1", "ignored", _OPEN_R1, _HUB, no_op=(False,)),
    _wandb_arg("wandb_entity"),
    _wandb_arg("wandb_project"),
    _wandb_arg("wandb_run_group"),
    _reward_arg("cosine_min_value_wrong", 0.0),
    _reward_arg("cosine_max_value_wrong", -0.5),
    _reward_arg("cosine_min_value_correct", 0.5),
    _reward_arg("cosine_max_value_correct", 1.0),
    _reward_arg("cosine_max_len", 1000),
    _reward_arg("repetition_n_grams", 3),
    _reward_arg("repetition_max_penalty", -1.0),
    _reward_arg("code_language", "python"),
    _reward_arg("code_eval_test_batch_size", 1),
    _reward_arg("parallel_code_exec_per_proc", 2),
    _reward_arg("code_provider", "e2b"),
    _reward_arg("ioi_provider", "piston"),
    _reward_arg("e2b_router_url", None),
    _reward_arg("morph_router_url", None),
    RetiredKey(
        "num_processes",
        "accelerate",
        "ignored",
        "an accelerate setting in open-r1's early recipes",
        "grpo-tui starts the training processes itself, one per GPU of --gpus",
        no_op=(None,),
    ),
)

BY_KEY: dict[str, RetiredKey] = {row.key: row for row in RETIRED_KEYS}


def shown(value: Any, width: int = 60) -> str:
    """A value as a note quotes it: its repr, cut short (a system prompt or a chat template runs long)."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def note(row: RetiredKey, value: Any) -> str:
    """What the reader tells the user about ``row``'s key set to ``value``."""
    if row.kind == "renamed":
        return f"{row.key}: {shown(value)} is read as {row.becomes} ({row.release}): {row.reason}."
    if row.kind == "honoured":
        return f"{row.key}: {shown(value)} is taken as grpo-tui's {row.becomes} ({row.release}): {row.reason}."
    return f"{row.key}: {shown(value)} is ignored ({row.release}): {row.reason}."


_WHAT = {"renamed": "read as `{becomes}`", "honoured": "grpo-tui's `{becomes}`", "ignored": "ignored"}


def markdown_table() -> str:
    """The table as docs/recipes.md shows it, rows that read alike in one (tests/unit/test_recipe_keys.py keeps
    the two equal)."""
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    for row in RETIRED_KEYS:
        what = _WHAT[row.kind].format(becomes=row.becomes)
        groups.setdefault((row.origin, what, row.release, row.reason), []).append(f"`{row.key}`")
    lines = ["| key | from | read as | changed in | why |", "| --- | --- | --- | --- | --- |"]
    for (origin, what, release, reason), keys in groups.items():
        lines.append(f"| {', '.join(keys)} | {origin} | {what} | {release} | {reason} |")
    return "\n".join(lines) + "\n"
