"""Maps a RunConfig onto TRL: tokenizer, dataset (an environment's or --dataset), reward functions, GRPOConfig,
GRPOTrainer.

Kept apart from runner.py so the run lifecycle reads without the TRL details, and so the bench can build
the same trainer a plain TRL script would.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from trainer_core.agents.episodes import (
    EpisodeReward,
    check_tool_calling,
    environment_factory,
    load_tools,
    standalone,
    timed,
    tool_functions,
)
from trainer_core.contract.config.checks import ConfigError, is_dataset_run, trackers
from trainer_core.contract.config.hardware import (
    STATE_KEY,
    Gpu,
    Machine,
    PreflightError,
    apply_fallbacks,
    fallback_warning,
    preflight,
)
from trainer_core.contract.config.ports import SERVER_URL_ENV
from trainer_core.contract.config.run_config import RunConfig, stop_on_rules
from trainer_core.contract.config.stack import UNTRIED_TRL_ENV, trl_is_checked, untried_trl
from trainer_core.contract.health.monitor import HealthMonitor, RunFacts, Thresholds, warning
from trainer_core.contract.health.sample_stats import SampleStats
from trainer_core.contract.health.seeding import seed_from_file
from trainer_core.contract.run.checkpoints import checkpoint_step
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity
from trainer_core.environment.dataset_source import HeldOutSource
from trainer_core.environment.user_code import UserCodeError, call_user
from trainer_core.environment.user_env import (
    ScoreEpisodeReward,
    extra_reward_functions,
    get_tools,
    load_environment,
    prompt_text,
)
from trainer_core.evaluation.heldout import (
    HeldOut,
    check_keep_best,
    environment_eval_dataset,
    reward_scorers,
    split_off,
    task_scorers,
)
from trainer_core.training.run_context import RunContext


def required(value: str | None, name: str) -> str:
    """A setting ``RunConfig.validate`` insists on (``model``; an environment run's module and class), from a
    config that may not have been validated: one without it stops here, plainly."""
    if value is None:
        raise ConfigError(name, f"{name} is required: pass --{name.replace('_', '-')}.")
    return value


def load_tokenizer(model: str, config: RunConfig | None = None):
    from transformers import AutoTokenizer

    init = (config.grpo_args.get("model_init_kwargs") if config else None) or {}
    trust = bool((config.grpo_args.get("trust_remote_code") if config else False) or init.get("trust_remote_code"))
    kwargs = {"revision": init["revision"]} if isinstance(init, dict) and init.get("revision") else {}
    tokenizer = AutoTokenizer.from_pretrained(model, trust_remote_code=trust, **kwargs)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def mixed_precision_flags(setting: str) -> dict:
    if setting == "auto":
        import torch

        use_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return {"bf16": use_bf16, "fp16": False}
    return {"bf16": setting == "bf16", "fp16": setting == "fp16"}


def device_flags() -> dict:
    import torch

    cuda = torch.cuda.is_available()
    # use_cpu is what makes several CPU processes join one gloo process group
    return {"dataloader_pin_memory": cuda, "use_cpu": not cuda}


def grpo_config_kwargs(config: RunConfig, output_dir: str) -> dict:
    """The GRPOConfig arguments for a RunConfig (pure mapping; no TRL import)."""
    kwargs = dict(
        output_dir=output_dir,
        num_generations=config.rl_num_generations,
        loss_type=config.rl_loss_type,
        mask_truncated_completions=config.rl_mask_truncated_completions,
        beta=config.rl_kl_coef,
        epsilon=config.rl_clip_range,
        max_completion_length=config.rl_max_new_tokens,
        top_k=config.rl_top_k,
        top_p=config.rl_top_p,
        temperature=config.rl_temperature,
        num_train_epochs=config.epochs,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.lr,
        gradient_accumulation_steps=config.gradient_accumulation,
        max_steps=config.max_steps,
        warmup_steps=config.warmup_ratio,  # transformers 5: a value < 1 is a fraction of the steps
        lr_scheduler_type=config.scheduler,
        seed=config.seed,
        logging_steps=config.logging_steps,
        save_steps=config.save_steps,
        save_strategy="steps",
        save_total_limit=config.save_total_limit,
        report_to=trackers(config),
        project=config.project_name,
        use_vllm=config.use_vllm,
        disable_tqdm=True,
    )
    if config.max_tool_calls is not None:
        kwargs["max_tool_calling_iterations"] = config.max_tool_calls
    if config.use_vllm:
        kwargs.update(vllm_mode=config.vllm_mode)
        if config.vllm_mode == "colocate":
            kwargs.update(
                vllm_gpu_memory_utilization=config.vllm_gpu_memory_utilization,
                vllm_tensor_parallel_size=config.vllm_tensor_parallel_size,
            )
        else:
            # a server the run started for itself is announced by its root process
            url = config.vllm_server_url or os.environ.get(SERVER_URL_ENV)
            if url:
                kwargs.update(vllm_server_base_url=url)
    # transformers 5 renamed it; setting both keeps TRL's default (True) from overriding ours silently
    kwargs["gradient_checkpointing"] = kwargs["activation_checkpointing"] = config.gradient_checkpointing
    return kwargs


def build_grpo_config(config: RunConfig, output_dir: str):
    import dataclasses

    # trl's public name: its lazy __init__ imports it under TYPE_CHECKING only, which pyright calls private
    from trl import GRPOConfig  # pyright: ignore[reportPrivateImportUsage]

    kwargs = grpo_config_kwargs(config, output_dir)
    kwargs.update(mixed_precision_flags(config.mixed_precision))
    kwargs.update(device_flags())
    kwargs.update(config.grpo_args)
    known = {f.name for f in dataclasses.fields(GRPOConfig)}
    if "activation_checkpointing" not in known:  # transformers before the rename
        kwargs.pop("activation_checkpointing", None)
    unknown = sorted(set(config.grpo_args) - known)
    if unknown:
        import difflib

        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hints.append(f"'{key}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        raise ValueError(f"grpo_args has keys that are not GRPOConfig fields: {', '.join(hints)}.")
    return GRPOConfig(**kwargs)


def prepare_dataset(
    env, tokenizer, config: RunConfig, run: RunContext | None, *, agentic: bool = False, what: str = "build_dataset"
):
    """Call build_dataset, check it, render tool schemas into the prompts and apply max_prompt_length.
    ``agentic``: TRL calls tools in this run, and renders their schemas itself: every prompt becomes chat
    messages (a text prompt one user message), as its tool loop needs."""
    import datasets

    dataset = call_user(what, env.build_dataset, tokenizer)
    if not isinstance(dataset, (datasets.Dataset, datasets.IterableDataset)):
        raise UserCodeError(
            f"{what} must return a datasets.Dataset, got {type(dataset).__name__}. "
            "Build one with datasets.Dataset.from_list([...]) or Dataset.from_dict({...})."
        )
    columns = dataset.column_names or []
    if "prompt" not in columns:
        raise UserCodeError(
            f"the dataset from {what} has no 'prompt' column (columns: {', '.join(columns) or 'none'}). "
            "Add a 'prompt' column of strings or chat message lists."
        )
    if isinstance(dataset, datasets.Dataset) and len(dataset) == 0:
        raise UserCodeError(f"{what} returned an empty dataset; it needs at least one prompt.")
    tools = None if agentic else get_tools(env)
    if agentic:

        def as_chat(row):
            if not isinstance(row["prompt"], list):
                row["prompt"] = [{"role": "user", "content": str(row["prompt"])}]
            return row

        dataset = dataset.map(as_chat)
    if tools:

        def render(row):
            prompt = row["prompt"]
            messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
            row["prompt"] = tokenizer.apply_chat_template(
                messages, tools=tools, add_generation_prompt=True, tokenize=False
            )
            return row

        dataset = dataset.map(render)
    if config.max_prompt_length:
        # counted as a Dataset: an IterableDataset has no len() and raises TypeError here (not supported yet)
        dataset = cast(datasets.Dataset, dataset)
        before, limit = len(dataset), config.max_prompt_length

        def short_enough(row):
            text = prompt_text(row["prompt"], tokenizer)
            return len(tokenizer(text, add_special_tokens=False)["input_ids"]) <= limit

        dataset = dataset.filter(short_enough)
        dropped = before - len(dataset)
        if dropped and run is not None:
            run.emit(
                warning(
                    HealthRule.PROMPT_TOO_LONG,
                    Severity.WARN if len(dataset) else Severity.CRITICAL,
                    0,
                    f"{dropped} of {before} prompts are longer than max_prompt_length ({config.max_prompt_length}) tokens and were dropped.",
                    {"dropped": dropped, "kept": len(dataset)},
                )
            )
        if not len(dataset):
            raise UserCodeError(
                f"every prompt is longer than max_prompt_length ({config.max_prompt_length}); nothing to train on."
            )
    return dataset


def _sample_recorder(config: RunConfig, run: RunContext, stats: SampleStats):
    """What the reward adapter calls with every scored batch: the statistics see all of it, and the first
    ``samples_per_step`` of each step are kept in samples.jsonl (rank 0; none with samples_per_step 0)."""
    out = run.open_samples() if config.samples_per_step else None
    counts: dict[int, int] = {}

    def record(samples: list[dict], global_step):
        stats.add(samples)
        if out is None:
            return
        step = (global_step or 0) + 1
        room = config.samples_per_step - counts.get(step, 0)
        out.write_many({"step": step, **sample} for sample in samples[: max(room, 0)])
        counts[step] = counts.get(step, 0) + min(len(samples), max(room, 0))
        for old in [s for s in counts if s < step - 1]:
            del counts[old]

    return record


# where the user pointed a tracker before anything here ran; otherwise each run's own folder
_USER_TRACKER_DIRS = {name: os.environ.get(name) for name in ("TENSORBOARD_LOGGING_DIR", "WANDB_DIR")}


def tracker_folders(config: RunConfig, run: RunContext) -> None:
    """TensorBoard and wandb write inside the run folder (RUN/tensorboard, RUN/wandb) unless told otherwise."""
    names = trackers(config)
    wanted = {
        "TENSORBOARD_LOGGING_DIR": ("tensorboard", run.folder.path / "tensorboard"),
        "WANDB_DIR": ("wandb", run.folder.path),
    }
    for variable, (tracker, folder) in wanted.items():
        if tracker in names and not _USER_TRACKER_DIRS[variable]:
            os.environ[variable] = str(folder)


@dataclass
class RewardSetup:
    """What a run trains on and how it is scored: the dataset, TRL's reward functions and their weights, a
    hook given the live model, and for an agentic run its standalone tools and TRL's environment factory."""

    dataset: Any
    funcs: list
    weights: list[float] | None = None
    bind: Callable[[Any], None] = lambda model: None
    tools: list[Callable] = field(default_factory=list)
    factory: Callable | None = None
    heldout: HeldOut | None = None

    @property
    def agentic(self) -> bool:
        return bool(self.tools or self.factory)


def reward_setup(config: RunConfig, tokenizer, run: RunContext | None, stats: SampleStats | None = None) -> RewardSetup:
    """The run's :class:`RewardSetup`, for either kind of run; ``stats`` sees every scored batch. An agentic
    run's tool calling is checked here, before the model loads."""
    stats = stats if stats is not None else SampleStats()
    on_samples = _sample_recorder(config, run, stats) if run is not None else None
    tools = load_tools(config.tools)
    if is_dataset_run(config):
        from trainer_core.environment.dataset_source import DatasetSource
        from trainer_core.rewards.reward_funcs import RewardFunctions

        if tools:
            check_tool_calling(tokenizer, str(config.model))
        dataset = prepare_dataset(DatasetSource(config), tokenizer, config, run, agentic=bool(tools))
        rewards = RewardFunctions(config.reward_funcs, on_samples=on_samples, tools=bool(tools))
        dataset, heldout = held_out_set(config, None, tokenizer, run, dataset, bool(tools))
        if heldout is not None:
            plain = RewardFunctions(config.reward_funcs, tools=bool(tools))
            add_scorers(config, heldout, None, plain.funcs, plain.weights)
        return RewardSetup(dataset, rewards.funcs, rewards.weights, tools=tools, heldout=heldout)
    env = load_environment(
        required(config.rl_env_module, "rl_env_module"),
        required(config.rl_env_class, "rl_env_class"),
        config.rl_env_config,
    )
    own_tools = tool_functions(env)
    if own_tools or tools:
        check_tool_calling(tokenizer, str(config.model))
    dataset = prepare_dataset(env, tokenizer, config, run, agentic=bool(own_tools or tools))
    score = (
        EpisodeReward(env, tokenizer, on_samples)
        if own_tools or tools
        else ScoreEpisodeReward(env, tokenizer, on_samples)
    )
    extra_funcs, extra_weights = extra_reward_functions(env)
    dataset, heldout = held_out_set(config, env, tokenizer, run, dataset, bool(own_tools or tools))
    factory = environment_factory(env, config.rl_env_config, config.tool_timeout) if own_tools else None
    eval_score = EpisodeReward(env, tokenizer) if own_tools or tools else ScoreEpisodeReward(env, tokenizer)
    if heldout is not None:
        add_scorers(config, heldout, env, [eval_score, *extra_funcs], [1.0, *extra_weights], factory)

    def bind(model):
        score.model = model
        eval_score.model = model

    return RewardSetup(
        dataset,
        [score, *extra_funcs],
        [1.0, *extra_weights] if extra_funcs else None,
        bind,
        tools=[*standalone(env, own_tools, config.tool_timeout), *(timed(t, config.tool_timeout) for t in tools)],
        factory=factory,
        heldout=heldout,
    )


def held_out_set(config: RunConfig, env, tokenizer, run: RunContext | None, dataset, agentic: bool):
    """(training dataset, HeldOut or None): the held-out prompts of the run, checked as training prompts are;
    with --eval-fraction they are taken out of the training dataset. Settings that need a held-out set are
    refused without one."""
    env_held = None
    if env is not None and not (config.eval_dataset or config.eval_fraction):
        env_held = environment_eval_dataset(env, tokenizer)  # None: no held-out set this run
    if not (config.eval_dataset or config.eval_fraction or env_held is not None):
        for name in ("keep_best", "eval_metric"):
            if getattr(config, name):
                raise ConfigError(
                    name,
                    f"{name} needs a held-out set, and this run has none: pass --eval-dataset PATH or --eval-fraction "
                    "F, or give the environment a build_eval_dataset(tokenizer) method (docs/evaluation.md).",
                )
        return dataset, None
    if agentic:
        from trainer_core.evaluation.agentic import check_trl_version

        check_trl_version()
    if config.eval_fraction:
        dataset, held = split_off(dataset, config, run.folder.path if run is not None and run.main else None)
        source_name = "fraction"
    elif env_held is not None:
        source_name = "environment"
        built = SimpleNamespace(build_dataset=lambda tokenizer: env_held)
        held = prepare_dataset(built, tokenizer, config, None, agentic=agentic, what="build_eval_dataset")
    else:
        source_name = "dataset"
        what = f"--eval-dataset {config.eval_dataset}"
        held = prepare_dataset(HeldOutSource(config), tokenizer, config, None, agentic=agentic, what=what)
    return dataset, HeldOut([dict(row) for row in held], source_name, agentic=agentic)


def add_scorers(
    config: RunConfig, heldout: HeldOut, env, funcs: list, weights: list[float] | None, factory: Callable | None = None
) -> None:
    """The held-out metrics: the task metrics first, then the reward functions (``reward``: their total), and in
    an agentic run ``tool_success`` (the share of episodes whose tool calls all succeeded)."""
    task = task_scorers(config, env, heldout.rows[0], agentic=heldout.agentic, factory=factory)
    heldout.scorers = {**task, **reward_scorers(funcs, weights)}
    if heldout.agentic:
        from trainer_core.evaluation.agentic import TOOL_SUCCESS, tool_success

        heldout.scorers.setdefault(TOOL_SUCCESS, lambda p, c, r, e=None: tool_success(c))
    heldout.task = list(task)
    check_keep_best(config, list(heldout.scorers))


def torch_machine() -> Machine:
    """This training process's devices as torch sees them: CUDA_VISIBLE_DEVICES is already the run's GPUs."""
    import socket

    import torch

    where = f"this training process's machine ({socket.gethostname()})"
    if not torch.cuda.is_available():
        return Machine(where)
    gpus = tuple(
        Gpu(i, torch.cuda.get_device_name(i), torch.cuda.get_device_capability(i))
        for i in range(torch.cuda.device_count())
    )
    return Machine(where, gpus)


def hardware_at_start(config: RunConfig, run: RunContext | None, machine: Machine | None = None) -> None:
    """The pre-flight again, with torch's view of the devices (a Slurm node's, which its launcher could not
    see): a setting this machine cannot run stops here, before the model loads, or with on_missing fallback
    takes its fallback, and config.yaml is rewritten to what runs. Rank 0 writes the ``hardware_fallback``
    warning for these and for the fallbacks the launcher applied (state.json), once per run."""
    found = preflight(config, machine or torch_machine())
    if found.problems and config.on_missing != "fallback":
        raise PreflightError(list(found.problems))
    records = apply_fallbacks(config, found.problems)
    if run is None or not run.main:
        return
    state = run.folder.read_state()
    launched = state.get(STATE_KEY) if run.resumed_from is None and not run.from_base else None
    if records:
        run.folder.save_config(config)
        run.folder.write_state(**{STATE_KEY: [*(state.get(STATE_KEY) or []), *records]})
    shown = [*(launched if isinstance(launched, list) else []), *records]
    if shown:
        run.emit(fallback_warning([r for r in shown if isinstance(r, dict)]))


def one_machine() -> bool:
    """Every rank of the run is on this machine: a remedy's next leg is started by machine 0's root alone, so on
    several machines remedies do not act (the other machines' roots end with the leg)."""
    world, local = os.environ.get("WORLD_SIZE", "1"), os.environ.get("LOCAL_WORLD_SIZE")
    return local is None or world == local


def check_trl(version: str | None = None) -> None:
    """ConfigError before the model loads when the installed TRL is not one the trainer was checked against."""
    if os.environ.get(UNTRIED_TRL_ENV) == "1":
        return
    if version is None:
        import trl

        version = str(trl.__version__)
    if not trl_is_checked(version):
        raise ConfigError("trl", untried_trl(version, "grpo-tui's trainer"))


def build_trainer(config: RunConfig, run: RunContext):
    from trl import GRPOTrainer  # pyright: ignore[reportPrivateImportUsage]  # as GRPOConfig above

    from trainer_core.training.callbacks import EventStreamCallback

    hardware_at_start(config, run)
    check_trl()
    model = required(config.model, "model")
    tokenizer = load_tokenizer(model, config)
    stats = SampleStats()
    setup = reward_setup(config, tokenizer, run, stats)
    args = build_grpo_config(config, str(run.folder.checkpoints_dir))
    if setup.weights:
        args.reward_weights = setup.weights
    tracker_folders(config, run)
    peft_config = None
    if config.peft:
        from peft import LoraConfig

        targets = config.target_modules
        peft_config = LoraConfig(
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            task_type="CAUSAL_LM",
            target_modules=targets if targets == "all-linear" else [t.strip() for t in targets.split(",") if t.strip()],
        )
    monitor = HealthMonitor(
        Thresholds.from_mapping(config.health),
        RunFacts(
            max_completion_length=config.rl_max_new_tokens,
            reward_funcs=len(setup.funcs),
            use_vllm=config.use_vllm,
            kl_measured=config.rl_kl_coef > 0,
            kl_coef=config.rl_kl_coef,
            tools=setup.agentic,
        ),
    )
    if run.resumed_from:
        seed_from_file(monitor, run.folder.events_file, checkpoint_step(Path(run.resumed_from)) or 0)
    from trainer_core.training.remedy_trigger import RemedyTrigger

    remedy = RemedyTrigger(run.folder, config) if run.main and config.remedy and one_machine() else None
    callback = EventStreamCallback(
        run.writer,
        run.stopper,
        echo=run.echo,
        on_step=run.set_step,
        monitor=monitor,
        extra_metrics=stats.pop,
        stop_on=tuple(stop_on_rules(config)),
        remedy=remedy,
    )
    from trainer_core.training.resumed_settings import ResumedSettings

    callbacks: list = [callback, ResumedSettings(config.lr)]
    evaluation = None
    if setup.heldout is not None:
        from trainer_core.evaluation.evaluator import Evaluator
        from trainer_core.training.eval_callback import EvalCallback

        evaluation = EvalCallback(
            Evaluator(config, tokenizer, setup.heldout),
            run,
            monitor,
            tuple(stop_on_rules(config)),
            save_total_limit=config.save_total_limit,
            remedy=remedy,
        )
        callbacks.append(evaluation)
        if config.keep_best:  # the callback rotates: the best checkpoints outlive the newest N
            args.save_total_limit = None
    if setup.factory is not None:
        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory's "experimental" warning
    engine_setup = contextlib.nullcontext()
    if config.use_vllm and config.vllm_mode == "colocate":  # a CPU engine's cache, KV cache and sockets
        from trainer_core.generation import vllm_cpu_sync

        vllm_cpu_sync.prepare_engine_env(run.folder.path)
        if evaluation is not None:
            from trainer_core.generation.colocated_engine import room_for

            engine_setup = room_for(evaluation.evaluator.sequences)
    with engine_setup:
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=setup.funcs,
            args=args,
            train_dataset=setup.dataset,
            processing_class=tokenizer,
            peft_config=peft_config,
            callbacks=callbacks,
            tools=setup.tools or None,
            environment_factory=setup.factory,
        )
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    if config.use_vllm:
        from trainer_core.generation import vllm_cpu_sync

        vllm_cpu_sync.install(
            trainer, config.vllm_mode
        )  # vLLM's CPU build syncs through its reload API; a GPU keeps TRL's sync
    setup.bind(trainer.model)
    if evaluation is not None:
        evaluation.trainer = trainer
        if config.use_vllm:  # the held-out eval samples through the run's own engine, where rank 0 alone can
            from trainer_core.evaluation.engines import not_usable, of_trainer

            why = not_usable(trainer)
            if why is None:
                evaluation.evaluator.engine = of_trainer(trainer)
            else:
                print(f"held-out evals generate with transformers, not the run's vLLM engine: {why}", file=sys.stderr)
        if setup.heldout is not None and setup.heldout.agentic:
            from trainer_core.evaluation.agentic import TrainerEpisodes

            evaluation.evaluator.episodes = TrainerEpisodes(trainer, config.eval_temperature, config.eval_generations)
    return trainer
