"""RunConfig: every parameter of a GRPO run, with its help text and its validation.

Stdlib only, on purpose: the app builds its forms from these fields, the CLI builds ``--help`` from them,
and both must be able to reject a bad config before torch or TRL is imported (that import takes seconds;
an error should not). Field names, flags and defaults follow the aitraining GRPO interface.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer_core.contract.config.checks import (
    ConfigError,
    LossType,
    MixedPrecision,
    OnMissing,
    RemedySeverity,
    TrainerType,
    VllmMode,
    iter_problems,
    parse_env_config,
    stop_on_rules,
    word_list,
)
from trainer_core.contract.config.eval_settings import eval_problems
from trainer_core.contract.config.notify_urls import NotifySeverity, notify_problems, secure_config
from trainer_core.contract.config.run_labels import label_problems
from trainer_core.contract.config.tool_specs import tool_problems
from trainer_core.contract.config.trl_names import RENAMED, TRL_FIELDS, TRL_REWARD_FUNCS

__all__ = [
    "ConfigError",
    "RunConfig",
    "config_fields",
    "flag_for",
    "load_file",
    "parse_env_config",
    "reward_funcs_mapping",
    "stop_on_rules",
]


def _f(
    default: Any,
    help: str,
    group: str,
    *,
    flag: str | None = None,
    required: bool = False,
    required_unless: str = "",
    metavar: str | None = None,
) -> Any:
    """A field with its help text and form group; ``required``: a run cannot start without it (the help shows
    'required' for its default), unless ``required_unless`` stands in (e.g. 'a dataset'). ``metavar``: what
    ``--help`` calls one value of a repeatable flag (default: the field's name).

    A choice field is typed with a ``Literal``; grpo_tui/field_spec.py derives each field's kind from its type."""
    meta: dict[str, Any] = {"help": help, "group": group}
    if flag:
        meta["flag"] = flag
    if metavar:
        meta["metavar"] = metavar
    if required:
        meta["required"] = True
    if required_unless:
        meta["required_unless"] = required_unless
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda d=default: type(d)(d), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class RunConfig:
    """A GRPO fine-tuning run. Every field has a CLI flag (``--field-name``) and a help text."""

    # -- model & environment ---------------------------------------------------------------------------
    model: str | None = _f(None, "Model to fine-tune: a local folder or a Hub id (required).", "model", required=True)
    project_name: str = _f("grpo-run", "Name of the project; shown in run lists and stored in the run folder.", "model")
    name: str = _f(
        "",
        "A name for the run, shown beside its id in the runs list, the monitor and Compare (at most 100 characters).",
        "model",
    )
    tags: list[str] = _f(
        [],
        "Tags to find the run by (CLI: --tag, repeatable): at most 20, each 1-40 letters, digits, '.', '_', ':' "
        "or '-'. The runs list's filter (/) matches them.",
        "model",
        flag="--tag",
        metavar="TAG",
    )
    notes: str = _f("", "Free-text notes about the run (at most 2000 characters).", "model")
    trainer: TrainerType = _f("grpo", "Trainer type. Only 'grpo' is supported.", "model")
    rl_env_module: str | None = _f(
        None,
        "Environment module: a dotted module path (e.g. my_envs.hotel) or a .py file path (required, unless the run "
        "names a --dataset and --reward-func instead).",
        "model",
        required=True,
        required_unless="a dataset",
    )
    rl_env_class: str | None = _f(
        None,
        "Name of the environment class inside --rl-env-module (required with it).",
        "model",
        required=True,
        required_unless="a dataset",
    )
    rl_env_config: dict[str, Any] | None = _f(
        None, "JSON object passed to the environment class as constructor keyword arguments.", "model"
    )
    tools: list[str] = _f(
        [],
        "Functions the model may call while it generates, beside an environment's own tool functions: "
        "FILE.py:FUNCTION (several: FILE.py:fn,fn2) or pkg.module.function, each with type hints and a Google-style "
        "docstring (CLI: --tools, repeatable). See docs/agents.md.",
        "model",
        metavar="FILE.py:FN[,FN]",
    )
    max_tool_calls: int | None = _f(
        10,
        "Rounds of tool calls an episode may take before it ends (GRPOConfig.max_tool_calling_iterations); null "
        "in a config for no limit but the completion length.",
        "model",
    )
    tool_timeout: float = _f(
        30.0,
        "Seconds one tool call may take: a call still running then counts as a failed call ('NAME timed out after "
        "N s'), its result is dropped, and the episode goes on. 0: no limit.",
        "model",
        metavar="S",
    )

    # -- GRPO -------------------------------------------------------------------------------------------
    rl_num_generations: int = _f(4, "Completions sampled per prompt (the GRPO group size); at least 2.", "grpo")
    rl_loss_type: LossType = _f("grpo", "Loss formulation.", "grpo")
    rl_mask_truncated_completions: bool = _f(
        False, "Exclude completions cut at --rl-max-new-tokens from the loss (recommended by DAPO).", "grpo"
    )
    rl_kl_coef: float = _f(
        0.1, "KL penalty coefficient (GRPOConfig.beta). 0 disables the reference model and KL logging.", "grpo"
    )
    rl_clip_range: float = _f(0.2, "Clipping range of the policy ratio (GRPOConfig.epsilon).", "grpo")

    # -- generation -------------------------------------------------------------------------------------
    rl_max_new_tokens: int = _f(128, "Maximum tokens per completion (GRPOConfig.max_completion_length).", "generation")
    rl_top_k: int = _f(50, "Sample only from the k most likely tokens; 0 disables top-k.", "generation")
    rl_top_p: float = _f(
        1.0, "Nucleus sampling: keep the smallest token set with this total probability, in (0, 1].", "generation"
    )
    rl_temperature: float = _f(1.0, "Sampling temperature (> 0). Higher gives more diverse completions.", "generation")
    max_prompt_length: int | None = _f(
        None,
        "Drop dataset rows whose rendered prompt is longer than this many tokens (default: keep all).",
        "generation",
    )

    # -- vLLM -------------------------------------------------------------------------------------------
    use_vllm: bool = _f(False, "Generate completions with vLLM (install the 'vllm' extra).", "vllm")
    vllm_mode: VllmMode = _f(
        "colocate", "Where vLLM runs: inside the training processes, or as a separate server.", "vllm"
    )
    vllm_gpu_memory_utilization: float = _f(
        0.3, "GPU memory fraction vLLM may use in colocate mode, in (0, 1].", "vllm"
    )
    vllm_server_url: str | None = _f(
        None, "URL of a running vLLM server (server mode). Default: start one for the run.", "vllm"
    )
    vllm_tensor_parallel_size: int = _f(1, "Tensor-parallel size of vLLM.", "vllm")
    vllm_server_gpus: int = _f(1, "GPUs reserved for the vLLM server the run starts in server mode.", "vllm")

    # -- LoRA -------------------------------------------------------------------------------------------
    peft: bool = _f(False, "Train LoRA adapters instead of all weights.", "lora")
    lora_r: int = _f(16, "LoRA rank.", "lora")
    lora_alpha: int = _f(32, "LoRA alpha (scaling).", "lora")
    lora_dropout: float = _f(0.05, "LoRA dropout probability.", "lora")
    target_modules: str = _f("all-linear", "Modules to adapt: 'all-linear' or a comma-separated list of names.", "lora")

    # -- optimisation -----------------------------------------------------------------------------------
    epochs: float = _f(1, "Passes over the dataset (ignored when --max-steps is set).", "optimisation")
    batch_size: int = _f(
        4, "Completions per device per optimiser micro-step (per_device_train_batch_size).", "optimisation"
    )
    lr: float = _f(1e-5, "Learning rate.", "optimisation")
    gradient_accumulation: int = _f(1, "Micro-steps accumulated per optimiser step.", "optimisation")
    max_steps: int = _f(-1, "Stop after this many optimiser steps (-1: run --epochs).", "optimisation")
    warmup_ratio: float = _f(0.0, "Fraction of steps spent warming the learning rate up.", "optimisation")
    scheduler: str = _f("linear", "Learning-rate schedule (any transformers scheduler name).", "optimisation")
    seed: int = _f(42, "Random seed for sampling, initialisation and data order.", "optimisation")

    # -- hardware & output ------------------------------------------------------------------------------
    mixed_precision: MixedPrecision = _f(
        "auto", "Mixed precision: auto (bf16 on a GPU that supports it, off on CPU), bf16, fp16 or no.", "hardware"
    )
    on_missing: OnMissing = _f(
        "error",
        "When a hardware setting cannot run where the run goes (flash attention without flash-attn, bf16 on a "
        "CPU, vLLM not installed, ...): error stops before launch and names each; fallback applies its safe "
        "fallback instead, with a warning in the run's events.",
        "hardware",
    )
    gradient_checkpointing: bool = _f(False, "Recompute activations in the backward pass to save memory.", "hardware")
    logging_steps: int = _f(1, "Write a metrics event every N optimiser steps.", "hardware")
    save_steps: int = _f(50, "Save a checkpoint every N optimiser steps (the safety net for crashes).", "hardware")
    save_total_limit: int | None = _f(None, "Keep at most this many checkpoints (oldest deleted first).", "hardware")
    samples_per_step: int = _f(8, "Scored completions kept per step in samples.jsonl (0 keeps none).", "hardware")
    report_to: str = _f(
        "none",
        "Also report to trackers: none, or any of trackio, wandb, tensorboard (comma-separated); "
        "docs/recipes.md says where each writes.",
        "hardware",
    )
    grpo_args: dict[str, Any] = _f(
        {},
        "Any other GRPOConfig field, as a mapping (CLI: --grpo-arg KEY=VALUE, repeatable).",
        "hardware",
        flag="--grpo-arg",
    )

    # -- health -----------------------------------------------------------------------------------------
    stop_on: str = _f(
        "",
        "Stop the run gracefully (with a checkpoint) when one of these health rules fires at warn or critical, "
        "comma-separated, e.g. kl_explosion,non_finite.",
        "health",
    )
    inspection: str | None = _f(
        None,
        "Reward inspection this run was checked with: an inspection id, or 'skipped' when launched without "
        "one (set by the app's launch gate).",
        "health",
    )
    health: dict[str, Any] = _f(
        {},
        "Health-rule thresholds to change, as a mapping (CLI: --health KEY=VALUE, repeatable), e.g. kl_high=1.0.",
        "health",
        flag="--health",
    )
    # -- remedies (docs/health.md#remedies): what the run's root does when a rule fires -------------------
    remedy: dict[str, Any] = _f(
        {},
        "Health rules whose warning rolls the run back to a checkpoint from before the trouble, to go on with "
        "--remedy-lr-scale and --remedy-set, as a mapping of rule: rollback (CLI: --remedy RULE=rollback, "
        "repeatable), e.g. kl_explosion=rollback. Off unless given. The run's root carries it out: it stops the "
        "trainer, goes back to the best held-out checkpoint before the onset (else the newest one; the base model "
        "counts as step 0) and resumes there, on one machine (docs/health.md#remedies).",
        "health",
        flag="--remedy",
        metavar="RULE=rollback",
    )
    remedy_lr_scale: float = _f(
        0.5,
        "A rollback resumes with the learning rate times this (0 < F <= 1; each rollback scales it again).",
        "health",
    )
    remedy_set: dict[str, Any] = _f(
        {},
        "Other settings a rollback resumes with, as a mapping (CLI: --remedy-set KEY=VALUE, repeatable), e.g. "
        "rl_kl_coef=0.05; only settings a resume may change.",
        "health",
        flag="--remedy-set",
    )
    max_remedies: int = _f(
        2,
        "At most this many rollbacks per run; when a rule with a remedy fires after them, it stops the run as "
        "--stop-on does, saying the remedies were spent.",
        "health",
    )
    remedy_severity: RemedySeverity = _f(
        "critical",
        "The lowest severity of a warning that takes its rule's remedy.",
        "health",
    )
    remedy_keep_bad: bool = _f(
        False,
        "Before a rollback, save a checkpoint of the bad state to study (never resumed from).",
        "health",
    )
    # -- alerts (docs/alerts.md), shown with health -----------------------------------------------------
    notify: list[str] = _f(
        [],
        "Send this run's alerts to these URLs (CLI: --notify URL, repeatable): each warning at or above "
        "--notify-severity, an auto-stop and the run's end. An https:// webhook gets a POST: Slack and Discord "
        "webhooks their own body, any other URL a JSON record (#slack, #discord, #json or #text at the end picks "
        "one); any other scheme is an apprise URL (mailto://, tgram://, workflows:// for Teams, …). Added to the notify "
        "URLs of the settings file on the host that runs it (~/.config/grpo-tui/settings.yaml). The URLs are "
        "secrets: config.yaml keeps them masked. See docs/alerts.md.",
        "health",
        metavar="URL",
    )
    notify_severity: NotifySeverity = _f(
        "warn",
        "The lowest warning severity sent to the notify URLs (a settings file's own notify_severity applies to its "
        "URLs); an auto-stop and the run's end are always sent.",
        "health",
    )
    slurm: dict[str, Any] = _f(
        {},
        "Submit the run as a Slurm batch job, with these settings: partition, time (minutes or [D-]HH:MM:SS), "
        "nodes, gpus_per_node, sbatch_args (a list), grace (seconds of warning before the time limit, default 300). "
        "Empty: run here. CLI: launch --slurm and its flags, or --slurm-option KEY=VALUE.",
        "slurm",
        flag="--slurm-option",
    )

    # -- dataset & reward functions: a run without an environment class ----------------------------------
    dataset: str | None = _f(
        None,
        "Train on this dataset with --reward-func instead of an environment: a local folder, a .json/.jsonl/"
        ".csv/.parquet file, or a Hub dataset id (where the Hub can be reached).",
        "data",
    )
    dataset_config: str | None = _f(
        None, "Configuration (subset) of --dataset, as datasets.load_dataset(name=...).", "data"
    )
    dataset_split: str = _f(
        "train",
        "Split of --dataset to train on (a file has one split, 'train'; slices such as 'train[:500]' work).",
        "data",
    )
    prompt_column: str = _f("prompt", "Column of --dataset holding the prompts: text, or chat message lists.", "data")
    system_prompt: str | None = _f(
        None,
        "System message put before every prompt of --dataset (a text prompt becomes a chat: system, user).",
        "data",
    )
    reward_funcs: dict[str, float] = _f(
        {},
        "Reward functions of a --dataset run, as a mapping NAME: WEIGHT. NAME is one of TRL's "
        f"{', '.join(TRL_REWARD_FUNCS)}, a dotted path (my_pkg.rewards.fn) or FILE.py:FUNCTION; each gets "
        "completions and the dataset's columns, as in TRL. CLI: --reward-func NAME[=WEIGHT], repeatable.",
        "data",
        flag="--reward-func",
    )

    # -- held-out evaluation (docs/evaluation.md) --------------------------------------------------------
    eval_dataset: str | None = _f(
        None,
        "Held-out prompts, never trained on: a local folder, a .json/.jsonl/.csv/.parquet file or a Hub dataset id "
        "with the training set's columns. An environment may define build_eval_dataset(tokenizer) instead.",
        "eval",
    )
    eval_split: str | None = _f(None, "Split of --eval-dataset (default: a file's one split, else 'test').", "eval")
    eval_fraction: float | None = _f(
        None,
        "Set aside this share of the training prompts, in (0, 1), as the held-out set (seeded by --seed; the held-out "
        "rows are recorded in the run folder).",
        "eval",
    )
    eval_metric: list[str] = _f(
        [],
        "Task metrics scored on the held-out completions, independent of the reward: FILE.py:FUNCTION or "
        "pkg.module.function, called as a reward function is, returning one number in [0, 1] per completion "
        "(CLI: repeatable). An environment may define eval_metrics(completion, **row) instead.",
        "eval",
        metavar="FILE.py:FN",
    )
    eval_steps: int | None = _f(
        None,
        "Evaluate every N optimiser steps, besides the base model at step 0 and the end (default: --save-steps).",
        "eval",
    )
    eval_generations: int = _f(4, "Completions sampled per held-out prompt (the k of pass@k and mean@k).", "eval")
    eval_temperature: float = _f(0.6, "Sampling temperature of the held-out completions (> 0).", "eval")
    eval_max_prompts: int | None = _f(
        64, "Evaluate at most this many held-out prompts (the first ones), bounding each eval's cost.", "eval"
    )
    eval_batch_size: int = _f(8, "Held-out prompts generated together.", "eval")
    eval_on_start: bool = _f(
        True, "Evaluate the base model at step 0: the baseline every later eval is read against.", "eval"
    )
    keep_best: str | None = _f(
        None,
        "Keep the K checkpoints with the best held-out METRIC (METRIC[:K], e.g. answer_correct:2) beside the last "
        "--save-total-limit ones; the best is never deleted.",
        "eval",
    )

    # ------------------------------------------------------------------------------------------------
    def validate(self, world_size: int = 1) -> RunConfig:
        """Raise ConfigError for the first value that cannot run; return self so calls can chain."""
        for problem in self._problems(world_size):
            raise problem
        return self

    def problems(self, world_size: int = 1) -> list[ConfigError]:
        """Every validation problem at once (the app's form shows them all)."""
        return list(self._problems(world_size))

    def _problems(self, world_size: int):
        yield from iter_problems(self, world_size)
        yield from notify_problems(self.notify, self.notify_severity)
        yield from tool_problems(self.tools, self.max_tool_calls, self.tool_timeout)
        yield from eval_problems(self)
        yield from label_problems(self.name, self.tags, self.notes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def for_run_folder(self, run_dir: str | Path) -> RunConfig:
        """The config that run_dir's config.yaml may hold: its real notify URLs moved into the folder's private
        notify.json and masked here (docs/alerts.md); the config itself when there is nothing to hide."""
        return secure_config(run_dir, self) or self

    @classmethod
    def from_dict(cls, data: dict, *, source: str = "config") -> RunConfig:
        data = dict(data)
        _check_keys(data, source)
        if isinstance(data.get("rl_env_config"), str):
            data["rl_env_config"] = parse_env_config(data["rl_env_config"])
        if "reward_funcs" in data:
            data["reward_funcs"] = reward_funcs_mapping(data["reward_funcs"])
        if "notify" in data:
            data["notify"] = word_list(data["notify"])
        for name in ("tools", "eval_metric", "tags"):
            if name in data:
                data[name] = word_list(data[name])
        return cls(**data)

    def save(self, path: str | Path) -> Path:
        """Write the config as YAML (``.yaml``/``.yml``) or JSON (anything else)."""
        path = Path(path)
        data = self.to_dict()
        if path.suffix in (".yaml", ".yml"):
            import yaml

            text = yaml.safe_dump(data, sort_keys=False)
        else:
            text = json.dumps(data, indent=2) + "\n"
        path.write_text(text)
        return path

    @classmethod
    def load(cls, path: str | Path) -> RunConfig:
        return cls.from_dict(load_file(path), source=str(path))


def config_fields() -> list[dataclasses.Field]:
    return list(dataclasses.fields(RunConfig))


def flag_for(f: dataclasses.Field) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def load_file(path: str | Path) -> dict:
    """Read a YAML or JSON config file into a mapping, with a clear error for anything else."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError("config", f"cannot read config file {path}: {exc.strerror}") from None
    return load_text(text, str(path), json_only=path.suffix == ".json")


def load_text(text: str, source: str, json_only: bool = False) -> dict:
    """A config's text (YAML, of which JSON is a part) into a mapping; ``source`` names it in errors."""
    try:
        if json_only:
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except ValueError as exc:  # json.JSONDecodeError and yaml.YAMLError both derive from it or Exception
        raise ConfigError("config", f"config file {source} is not valid: {exc}") from None
    except Exception as exc:
        raise ConfigError("config", f"config file {source} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            "config", f"config file {source} must hold a mapping of field: value, got {type(data).__name__}"
        )
    return data


def reward_funcs_mapping(value: Any) -> Any:
    """reward_funcs as NAME: WEIGHT; a list of names (or one name) gets weight 1.0 each, as in TRL."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return {name: 1.0 for name in value}
    return value


def _check_keys(data: dict, source: str) -> None:
    names = [f.name for f in dataclasses.fields(RunConfig)]
    for key in data:
        if key not in names:
            if key in RENAMED:
                raise ConfigError(
                    key,
                    f"unknown key '{key}' in {source}: '{key}' is a trl grpo recipe key; here it is "
                    f"'{RENAMED[key]}'. To read the whole file as a TRL recipe, pass --format trl.",
                )
            close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
            if close:
                hint = f" Did you mean '{close[0]}'?"
            elif key in TRL_FIELDS:
                hint = (
                    f" '{key}' is a TRL field: put it under 'grpo_args', or pass the file as a TRL recipe "
                    "with --format trl."
                )
            else:
                hint = " Other GRPOConfig fields go under 'grpo_args'."
            raise ConfigError(key, f"unknown key '{key}' in {source}.{hint}")
