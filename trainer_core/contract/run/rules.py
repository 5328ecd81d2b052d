"""The names of the health rules, which side judges each, and the one advice text each carries.

A rule's name is part of the run format (a ``warning`` event's ``rule``, ``--stop-on``, the docs), so it is
an enum member whose value is that name: ``HealthRule.KL_EXPLOSION == "kl_explosion"`` and the JSON on disk
is the plain string. Every rule that any part of grpo-tui emits is a member here — the trainer's metric
rules, the config, dataset and resume rules written at the start, and the watcher's — so the docs test, the
``--stop-on`` check and a reader replaying old runs all see the same list. The advice lives here too, one
text per rule, so a warning built by the trainer and the same warning inferred by a watcher say the same.
Leaf module: it imports nothing of the event schema, which imports it.
"""

from __future__ import annotations

from trainer_core.contract.run.value_enum import ValueEnum


class RuleGroup(ValueEnum):
    """Who judges a rule, and when."""

    METRIC = "metric"  # the trainer, at every logged step; these can stop a run (--stop-on)
    CONFIG = "config"  # the trainer or the launcher, from the config, at step 0
    DATASET = "dataset"  # the trainer, while it builds the dataset, at step 0
    RESUME = "resume"  # the trainer, when a resumed run starts
    WATCHER = "watcher"  # a viewer (runs, watch, the app), from the run folder: what a trainer cannot report


class HealthRule(ValueEnum):
    # metric rules, in the order the monitor evaluates them
    MODE_COLLAPSE = "mode_collapse"
    KL_EXPLOSION = "kl_explosion"
    ENTROPY_COLLAPSE = "entropy_collapse"
    NO_LEARNING_SIGNAL = "no_learning_signal"
    REWARD_PLATEAU = "reward_plateau"
    NON_FINITE = "non_finite"
    TRUNCATION = "truncation"
    ONE_REWARD_CARRIES = "one_reward_carries"
    LENGTH_EXPLOITATION = "length_exploitation"
    DEGENERATE_COMPLETIONS = "degenerate_completions"
    GRAD_NORM_SPIKE = "grad_norm_spike"
    LOSS_SPIKE = "loss_spike"
    CLIP_RATIO_HIGH = "clip_ratio_high"
    SAMPLING_MISMATCH = "sampling_mismatch"
    TOOL_FAILURES = "tool_failures"
    TOOL_UNUSED = "tool_unused"
    TURN_LIMIT = "turn_limit"
    REWARD_TASK_DIVERGENCE = "reward_task_divergence"  # judged at each held-out eval, not at every step
    # config rules
    KL_NOT_MEASURED = "kl_not_measured"
    SMALL_GROUPS = "small_groups"
    DISK_ESTIMATE = "disk_estimate"
    HARDWARE_FALLBACK = "hardware_fallback"
    # dataset and resume rules
    PROMPT_TOO_LONG = "prompt_too_long"
    TORN_CHECKPOINT = "torn_checkpoint"
    # watcher rules
    STALL = "stall"
    DISK_SPACE = "disk_space"
    CRASH_OOM = "crash_oom"
    CRASH_NAN_PROBABILITIES = "crash_nan_probabilities"
    CRASH_NCCL_TIMEOUT = "crash_nccl_timeout"
    CRASH_DISK_FULL = "crash_disk_full"
    CRASH_DISK_ERROR = "crash_disk_error"
    CRASH_ENVIRONMENT = "crash_environment"
    CRASH_KILLED = "crash_killed"
    CRASH = "crash"
    CONNECTION_LOST = "connection_lost"

    @property
    def group(self) -> RuleGroup:
        return _SPECS[self][0]

    @property
    def advice(self) -> str:
        """What to change: the text every warning of this rule carries."""
        return _SPECS[self][1]

    @property
    def stoppable(self) -> bool:
        """``--stop-on`` may name it: the metric rules, which the trainer judges while it can still stop, and a
        stall, which the run's root judges and stops (``trainer_core/root/stall_watch.py``)."""
        return self.group is RuleGroup.METRIC or self is HealthRule.STALL


def rules_of(*groups: RuleGroup) -> tuple[str, ...]:
    """The names of the rules in ``groups``, in definition order, as plain strings (for messages and files)."""
    return tuple(rule.value for rule in HealthRule if rule.group in groups)


_SPECS: dict[HealthRule, tuple[RuleGroup, str]] = {
    HealthRule.MODE_COLLAPSE: (
        RuleGroup.METRIC,
        "Raise --rl-num-generations, raise --rl-temperature, or add a diversity term to the reward.",
    ),
    HealthRule.KL_EXPLOSION: (
        RuleGroup.METRIC,
        "Lower --lr, or raise --rl-kl-coef to hold the policy closer to the reference model.",
    ),
    HealthRule.ENTROPY_COLLAPSE: (
        RuleGroup.METRIC,
        "Lower --lr, raise --rl-temperature, or raise --rl-kl-coef; a collapsed policy stops exploring.",
    ),
    HealthRule.NO_LEARNING_SIGNAL: (
        RuleGroup.METRIC,
        "Check the reward function: GRPO learns only from groups whose "
        "rewards differ. Give partial credit, make tasks easier (or harder "
        "if everything succeeds), or raise --rl-num-generations.",
    ),
    HealthRule.REWARD_PLATEAU: (
        RuleGroup.METRIC,
        "Check the reward function, try a higher --lr, and check that the model "
        "can succeed at all (if it never does, start with SFT).",
    ),
    HealthRule.NON_FINITE: (
        RuleGroup.METRIC,
        "Lower --lr, check for bf16/fp16 overflow (try --mixed-precision no), and "
        "check the reward function for NaN; resume from the last good checkpoint.",
    ),
    HealthRule.TRUNCATION: (
        RuleGroup.METRIC,
        "Raise --rl-max-new-tokens, or pass --rl-mask-truncated-completions so "
        "cut-off completions do not teach the model.",
    ),
    HealthRule.ONE_REWARD_CARRIES: (
        RuleGroup.METRIC,
        "Read completions that score high on the rising function: the model may have learned the format, not "
        "the task. Lower that function's weight (--reward-func NAME=WEIGHT), give the flat one partial credit, "
        "or make its tasks easier.",
    ),
    HealthRule.LENGTH_EXPLOITATION: (
        RuleGroup.METRIC,
        "Check whether the reward pays for length rather than for the answer: normalise or cap it by length, "
        "use --rl-loss-type dr_grpo (no length bias), and read the longest (or shortest) high-scoring samples.",
    ),
    HealthRule.DEGENERATE_COMPLETIONS: (
        RuleGroup.METRIC,
        "The reward pays for repetitive or copied output: read the samples, penalise repetition in the reward, "
        "raise --rl-temperature, or raise --rl-kl-coef; resume from a checkpoint before the onset.",
    ),
    HealthRule.GRAD_NORM_SPIKE: (
        RuleGroup.METRIC,
        "Lower --lr, clip gradients harder (--grpo-arg max_grad_norm=0.5), or set --rl-kl-coef above 0; look "
        "at the samples of that step for an outlier reward.",
    ),
    HealthRule.LOSS_SPIKE: (
        RuleGroup.METRIC,
        "Lower --lr, lower --rl-clip-range, and check the rewards of that step for outliers; with vLLM, check "
        "sampling_mismatch too. Resume from the last checkpoint before the spike if it repeats.",
    ),
    HealthRule.CLIP_RATIO_HIGH: (
        RuleGroup.METRIC,
        "The updates are too large for the clip range: lower --lr, or fewer passes per batch "
        "(--grpo-arg num_iterations=1).",
    ),
    HealthRule.SAMPLING_MISMATCH: (
        RuleGroup.METRIC,
        "The generator and the trainer disagree on token probabilities: check that vLLM loads the same "
        "weights and dtype, sync weights more often, and keep importance-sampling correction on "
        "(--grpo-arg vllm_importance_sampling_correction=true).",
    ),
    HealthRule.TOOL_FAILURES: (
        RuleGroup.METRIC,
        "Open failed calls in the Completions tab: fix the tool if it raises on valid input, make its docstring "
        "say what each argument takes, or give partial reward for well-formed calls.",
    ),
    HealthRule.TOOL_UNUSED: (
        RuleGroup.METRIC,
        "Reward episodes that use the tools (get_reward or score_episode), check that the prompt shows the tool "
        "schemas, or start from a model fine-tuned on tool-call transcripts.",
    ),
    HealthRule.TURN_LIMIT: (
        RuleGroup.METRIC,
        "Raise --max-tool-calls or --rl-max-new-tokens, or look at the cut-off episodes for a loop of the same "
        "call (a tool result the model cannot use).",
    ),
    HealthRule.REWARD_TASK_DIVERGENCE: (
        RuleGroup.METRIC,
        "Likely reward hacking: the reward is being earned without doing the task (with no task metric, the "
        "held-out reward falling means over-fitting to the training prompts). Read what scores high in the "
        "Completions tab, tighten the reward so it checks the task itself, keep the checkpoint that scored best "
        "on the held-out metric (--keep-best METRIC; `grpo-tui checkpoints` ranks them), or lower --lr or raise "
        "--rl-kl-coef.",
    ),
    HealthRule.KL_NOT_MEASURED: (
        RuleGroup.CONFIG,
        "Set --rl-kl-coef above 0 (0.01-0.1) to measure and limit how far the policy drifts.",
    ),
    HealthRule.SMALL_GROUPS: (
        RuleGroup.CONFIG,
        "Use --rl-num-generations 8 or more for steadier advantages, if memory allows.",
    ),
    HealthRule.DISK_ESTIMATE: (
        RuleGroup.CONFIG,
        "Free space on that filesystem, point --runs-dir at a larger one, keep "
        "fewer checkpoints (--save-total-limit 2) or save less often "
        "(--save-steps); --peft checkpoints are far smaller.",
    ),
    HealthRule.HARDWARE_FALLBACK: (
        RuleGroup.CONFIG,
        "The run changed these settings to what this machine can run (on_missing: fallback): it is slower or "
        "uses more memory than the config asked for. To run them as written, train where their package and GPU "
        "are (docs/hardware.md); to refuse such a run instead, set --on-missing error.",
    ),
    HealthRule.PROMPT_TOO_LONG: (RuleGroup.DATASET, "Raise --max-prompt-length or shorten the prompts."),
    HealthRule.TORN_CHECKPOINT: (
        RuleGroup.RESUME,
        "A save was cut short (a full disk, or the trainer killed while "
        "saving). The skipped folders are kept under checkpoints/torn/; delete "
        "them once you do not need them, and check free space (df -h) before "
        "long runs.",
    ),
    HealthRule.STALL: (
        RuleGroup.WATCHER,
        "Check trainer.log and the GPU panel: a hung reward function or tool call, a "
        "deadlocked collective, or a stopped process (SIGSTOP) look like this. py-spy "
        "dump --pid PID shows where it is stuck.",
    ),
    HealthRule.DISK_SPACE: (
        RuleGroup.WATCHER,
        "Free space on that filesystem now (or move older runs elsewhere), or lower "
        "--save-total-limit on the next run: the run fails at the first write that "
        "does not fit. A failed run resumes from its last complete checkpoint "
        "(grpo-tui train --resume RUN) once there is room.",
    ),
    HealthRule.CRASH_OOM: (
        RuleGroup.WATCHER,
        "Lower --rl-num-generations or --batch-size (raise --gradient-accumulation "
        "to keep the batch), turn on --gradient-checkpointing, use --peft, or lower "
        "--vllm-gpu-memory-utilization.",
    ),
    HealthRule.CRASH_NAN_PROBABILITIES: (
        RuleGroup.WATCHER,
        "Lower --lr, try --mixed-precision no (or bf16 instead of "
        "fp16), raise --rl-kl-coef, and resume from an earlier "
        "checkpoint.",
    ),
    HealthRule.CRASH_NCCL_TIMEOUT: (
        RuleGroup.WATCHER,
        "Look for the rank that failed first in trainer.log (often out of "
        "memory or an exception in the environment); a long single-rank "
        "step such as reward scoring can also exceed the timeout (raise it "
        "with --grpo-arg ddp_timeout=3600).",
    ),
    HealthRule.CRASH_DISK_FULL: (
        RuleGroup.WATCHER,
        "Free space on the runs folder's filesystem (or point --runs-dir "
        "elsewhere for new runs), keep fewer checkpoints (--save-total-limit) "
        "or save less often, then resume: grpo-tui train --resume RUN "
        "continues from the last complete checkpoint.",
    ),
    HealthRule.CRASH_DISK_ERROR: (
        RuleGroup.WATCHER,
        "The filesystem refused a write (read-only, or an I/O error): check "
        "`dmesg` and the mount, then resume from the last complete "
        "checkpoint on a healthy disk.",
    ),
    HealthRule.CRASH_ENVIRONMENT: (
        RuleGroup.WATCHER,
        "Fix the environment for this case (its traceback and columns are in the error), then resume or restart.",
    ),
    HealthRule.CRASH_KILLED: (
        RuleGroup.WATCHER,
        "A SIGKILL with no message, or processes gone without a word, usually "
        "means the kernel's out-of-memory killer: check `dmesg` and the last "
        "lines of trainer.log, lower host memory use (smaller --batch-size, "
        "fewer dataloader workers) or find who sent the signal, then resume "
        "from the last checkpoint.",
    ),
    HealthRule.CRASH: (RuleGroup.WATCHER, "Read the traceback in the error event and trainer.log."),
    HealthRule.CONNECTION_LOST: (
        RuleGroup.WATCHER,
        "grpo-tui reconnects by itself and catches up from where its copy ends; the run goes on regardless.",
    ),
}
