"""The keys `trl grpo --config` understands, and TRL's defaults for the ones grpo-tui maps to its own fields.

The CLI reads a TRL recipe before torch or TRL is imported (a wrong key must fail in a fraction of a second,
not after seconds of imports), so the contract layer needs TRL's field names without importing TRL. They are
the fields of the four dataclasses `trl grpo` parses (``trl/scripts/grpo.py``: GRPOScriptArguments,
GRPOConfig, ModelConfig, DatasetMixtureConfig) in the installed TRL; ``tests/unit/test_trl_recipe.py``
compares every list and every default here with the real classes, so an upgrade of TRL that changes
them fails loudly instead of rejecting a valid key or passing on one TRL no longer has.
"""

from __future__ import annotations

SCRIPT_FIELDS = tuple(
    """
    dataset_name dataset_config dataset_train_split dataset_test_split dataset_streaming ignore_bias_buffers
    reward_model_name_or_path reward_funcs
""".split()
)

GRPO_CONFIG_FIELDS = tuple(
    """
    output_dir per_device_train_batch_size num_train_epochs max_steps learning_rate lr_scheduler_type
    lr_scheduler_kwargs warmup_steps optim optim_args weight_decay adam_beta1 adam_beta2 adam_epsilon
    optim_target_modules gradient_accumulation_steps average_tokens_across_devices max_grad_norm
    label_smoothing_factor bf16 fp16 bf16_full_eval fp16_full_eval tf32 activation_checkpointing
    activation_checkpointing_kwargs gradient_checkpointing gradient_checkpointing_kwargs torch_compile
    torch_compile_backend torch_compile_mode use_liger_kernel liger_kernel_config use_cache neftune_noise_alpha
    torch_empty_cache_steps auto_find_batch_size logging_strategy logging_steps logging_first_step
    log_on_each_node logging_nan_inf_filter include_num_input_tokens_seen log_level log_level_replica
    disable_tqdm report_to run_name project trackio_space_id trackio_bucket_id trackio_static_space_id
    eval_strategy eval_steps eval_delay per_device_eval_batch_size prediction_loss_only eval_on_start
    eval_do_concat_batches eval_use_gather_object eval_accumulation_steps include_for_metrics batch_eval_metrics
    save_only_model save_strategy save_steps save_on_each_node save_total_limit enable_jit_checkpoint
    push_to_hub hub_token hub_private_repo hub_model_id hub_strategy hub_always_push hub_revision
    load_best_model_at_end metric_for_best_model greater_is_better ignore_data_skip
    restore_callback_states_from_checkpoint full_determinism seed data_seed use_cpu accelerator_config
    parallelism_config dataloader_drop_last dataloader_num_workers dataloader_pin_memory
    dataloader_persistent_workers dataloader_prefetch_factor dataloader_multiprocessing_context
    dataloader_in_order remove_unused_columns label_names train_sampling_strategy length_column_name
    ddp_find_unused_parameters ddp_bucket_cap_mb ddp_broadcast_buffers ddp_static_graph ddp_backend ddp_timeout
    fsdp fsdp_config deepspeed debug skip_memory_metrics do_train do_eval do_predict resume_from_checkpoint
    local_rank model_init_kwargs trust_remote_code router_aux_loss_coef disable_dropout cast_lm_head_to_fp32
    num_generations num_generations_eval max_completion_length ds3_gather_for_generation shuffle_dataset
    pad_to_multiple_of generation_batch_size steps_per_generation temperature top_p top_k min_p
    generation_kwargs chat_template_kwargs repetition_penalty cache_implementation use_vllm vllm_mode
    vllm_model_impl vllm_enable_sleep_mode vllm_structured_outputs_regex vllm_server_base_url vllm_server_host
    vllm_server_port vllm_server_timeout vllm_group_port vllm_gpu_memory_utilization vllm_max_model_length
    vllm_tensor_parallel_size beta num_iterations epsilon delta epsilon_high sapo_temperature_neg
    sapo_temperature_pos vespo_k_pos vespo_lambda_pos vespo_k_neg vespo_lambda_neg importance_sampling_level
    reward_weights multi_objective_aggregation scale_rewards loss_type mask_truncated_completions sync_ref_model
    ref_model_mixup_alpha ref_model_sync_steps top_entropy_quantile entropy_coef use_adaptive_entropy
    entropy_coef_min entropy_coef_max entropy_coef_delta entropy_target max_tool_calling_iterations
    vllm_importance_sampling_correction vllm_importance_sampling_mode vllm_importance_sampling_clip_max
    vllm_importance_sampling_clip_min off_policy_mask_threshold use_bias_correction_kl log_completions
    log_multimodal num_completions_to_print log_unique_prompts log_completions_hub_repo
    use_transformers_continuous_batching transformers_continuous_batching_config use_transformers_paged
    vllm_importance_sampling_cap
""".split()
)

MODEL_CONFIG_FIELDS = tuple(
    """
    model_name_or_path model_revision dtype attn_implementation use_peft lora_r lora_alpha lora_dropout
    lora_target_modules lora_target_parameters lora_modules_to_save lora_task_type use_rslora use_dora
    load_in_8bit load_in_4bit bnb_4bit_quant_type use_bnb_nested_quant bnb_4bit_quant_storage
""".split()
)

MIXTURE_FIELDS = tuple(
    """
    datasets streaming test_split_size
""".split()
)

TRL_FIELDS = frozenset(SCRIPT_FIELDS + GRPO_CONFIG_FIELDS + MODEL_CONFIG_FIELDS + MIXTURE_FIELDS)

# Keys of older TRL, transformers and open-r1 releases that recipes still carry are not here: see
# recipe_keys.RETIRED_KEYS, which says what each became.

# TRL's value for each key grpo-tui maps, where the recipe leaves it out: a recipe means what `trl grpo`
# would do with it, not what grpo-tui's own defaults would.
TRL_DEFAULTS = {
    "learning_rate": 1e-06,
    "num_generations": 8,
    "beta": 0.0,
    "epsilon": 0.2,
    "max_completion_length": 512,
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": 0,
    "loss_type": "dapo",
    "mask_truncated_completions": False,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "num_train_epochs": 3.0,
    "max_steps": -1,
    "lr_scheduler_type": "linear",
    "warmup_steps": 0,
    "seed": 42,
    "logging_steps": 10,
    "save_steps": 500,
    "save_total_limit": None,
    "gradient_checkpointing": True,
    "use_vllm": False,
    "vllm_mode": "colocate",
    "vllm_gpu_memory_utilization": 0.3,
    "vllm_tensor_parallel_size": 1,
    "vllm_server_base_url": None,
    "use_peft": False,
    "lora_r": 16,
    "lora_alpha": 32,
    "lora_dropout": 0.05,
    "dataset_train_split": "train",
    "dtype": "float32",  # trl grpo loads the model in float32 unless told; grpo-tui alone would keep the checkpoint's
}

# TRL's defaults for keys grpo-tui cannot honour: a recipe that leaves one at this value asks for nothing
# grpo-tui does differently, so it passes without a word.
TRL_UNHONOURED_DEFAULTS = {
    "reward_model_name_or_path": None,
    "dataset_streaming": False,
    "streaming": False,
    "test_split_size": None,
    "ignore_bias_buffers": False,
    "dataset_test_split": "test",
    "lora_target_parameters": None,
    "lora_modules_to_save": None,
    "lora_task_type": "CAUSAL_LM",
    "use_rslora": False,
    "use_dora": False,
    "load_in_8bit": False,
    "load_in_4bit": False,
    "bnb_4bit_quant_type": "nf4",
    "use_bnb_nested_quant": False,
    "bnb_4bit_quant_storage": None,
    "model_revision": "main",
    "output_dir": None,
    "push_to_hub": False,
    "hub_model_id": None,
    "hub_strategy": "every_save",
    "hub_private_repo": None,
    "hub_token": None,
    "hub_always_push": False,
    "hub_revision": None,
    "do_eval": False,
    "eval_strategy": "no",
    "eval_steps": None,
    "per_device_eval_batch_size": 8,
    "eval_on_start": False,
    "save_strategy": "steps",
    "logging_strategy": "steps",
    "resume_from_checkpoint": None,
    "use_cpu": False,
    "disable_tqdm": None,
    "do_train": False,
    "do_predict": False,
}

# Recipe keys that carry over to a RunConfig field of another name, value unchanged.
RENAMED = {
    "model_name_or_path": "model",
    "learning_rate": "lr",
    "num_generations": "rl_num_generations",
    "beta": "rl_kl_coef",
    "epsilon": "rl_clip_range",
    "max_completion_length": "rl_max_new_tokens",
    "temperature": "rl_temperature",
    "top_p": "rl_top_p",
    "top_k": "rl_top_k",
    "loss_type": "rl_loss_type",
    "mask_truncated_completions": "rl_mask_truncated_completions",
    "per_device_train_batch_size": "batch_size",
    "gradient_accumulation_steps": "gradient_accumulation",
    "num_train_epochs": "epochs",
    "lr_scheduler_type": "scheduler",
    "vllm_server_base_url": "vllm_server_url",
    "use_peft": "peft",
    "project": "project_name",
    "dataset_name": "dataset",
    "dataset_train_split": "dataset_split",
    "max_tool_calling_iterations": "max_tool_calls",
}
# Recipe keys that are RunConfig fields of the same name and meaning.
SAME_NAME = (
    "max_steps",
    "seed",
    "logging_steps",
    "save_steps",
    "save_total_limit",
    "gradient_checkpointing",
    "use_vllm",
    "vllm_mode",
    "vllm_gpu_memory_utilization",
    "vllm_tensor_parallel_size",
    "lora_r",
    "lora_alpha",
    "lora_dropout",
    "dataset_config",
    "tools",
)

# The reward functions `trl grpo` knows by name (trl/scripts/grpo.py), besides any dotted import path.
TRL_REWARD_FUNCS = (
    "accuracy_reward",
    "reasoning_accuracy_reward",
    "think_format_reward",
    "get_soft_overlong_punishment",
)
