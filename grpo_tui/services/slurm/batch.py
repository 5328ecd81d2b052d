"""Slurm: a run submitted as a batch job whose script is kept in the run folder, readable by a person.

The script (``slurm/job.sbatch``) asks for a TERM ``grace`` seconds before the time limit
(``--signal=B:TERM@GRACE``: to the batch shell only), appends the job's output to the run folder, lets
Slurm requeue the job, and ``exec``s ``grpo-tui job-start`` so that the signal reaches the run's own
process and not a shell that would swallow it. Before that it enters the folder the launch was made from
(recorded in state.json as ``launch_dir``), so a relative path in the config (``rl_env_module: envs/my_env.py``,
a dataset file, ``rewards.py:fn``) means in the job what it means for a run started where the launch was
made. ``job-start`` (``cli/job_start.py``) then resumes the run when this is a restart and ``exec``s its
root. Every word of it is quoted for the shell; the ``#SBATCH``
lines come from checked settings (``trainer_core/contract/config/slurm_settings.py``), and every path or name
grpo-tui writes into one is quoted for sbatch's own reader of those lines (``sbatch_word``: double quotes,
backslash escapes, ``%%`` for a ``%`` that is not a filename pattern), so a runs dir with spaces, quotes or a
``#`` means what it says. The job id goes into
state.json once it is checked to be one (it is later passed to scancel and scontrol); from then on the run
folder is the truth as for any run, and the queue says only whether it waits (``services/slurm/queue.py``).
A resume of the run (``launch --resume``, ``rollback``) is a new job of the same script (``resubmit``): the
login node that resumes it never trains it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from grpo_tui.services.slurm.queue import QUEUE, job_of
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.config.slurm_settings import grace, sbatch_options
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.slurm_job import GRACE_ENV, valid_job_id
from trainer_core.contract.run.status import Status

SCRIPT = Path("slurm") / "job.sbatch"
_NO_LAUNCH_DIR = (
    "grpo-tui: the launch folder {} is not on this node: relative paths in the config will not resolve "
    "(make them absolute, or launch from a folder on the shared filesystem)"
)


def sbatch_word(word: str) -> str:
    """``word`` as one argument of an ``#SBATCH`` line, the way sbatch reads it back: in double quotes, with a
    backslash before each ``\\`` and ``"`` (sbatch honours a backslash inside quotes too, unlike a shell), so
    spaces, quotes and ``#`` (which starts a comment outside quotes) are kept. ConfigError for a line break,
    which would end the line and start a line of the script."""
    if any(c in word for c in "\n\r\0"):
        raise ConfigError("slurm", f"{word!r} holds a line break, which a #SBATCH line cannot: {_NO_PATH_FIX}")
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def output_pattern(folder: Path) -> str:
    """The job's ``--output``: the run folder's ``slurm/slurm-%j.out``, a ``%`` of the path itself doubled
    (Slurm expands ``%j``, ``%u``, ... in it). ConfigError for a backslash in the path: Slurm reads one as
    "no patterns here" and drops it, so no way of writing the path survives."""
    text = str(folder / "slurm")
    if "\\" in text:
        raise ConfigError(
            "slurm", f"the run folder {text!r} holds a backslash, which Slurm's --output cannot name: {_NO_PATH_FIX}"
        )
    return text.replace("%", "%%") + "/slurm-%j.out"


_NO_PATH_FIX = "use a runs dir whose path has none (--runs-dir or $GRPO_TUI_RUNS_DIR)"


def job_script(folder: RunFolder, config: RunConfig, python: str | None = None, launch_dir: str | None = None) -> str:
    """The batch script; ``launch_dir``: the folder the launch was made from (default: the current one), where
    the job goes first, so that relative paths in the config mean what they mean for a run started here.
    ConfigError for a run folder whose path a #SBATCH line cannot hold (a line break, a backslash)."""
    settings = config.slurm
    path = folder.path.resolve()
    launch_dir = launch_dir or os.getcwd()
    seconds = grace(settings)
    options = [
        f"--job-name={sbatch_word(f'grpo-{folder.run_id}')}",
        f"--output={sbatch_word(output_pattern(path))}",
        "--open-mode=append",
        f"--signal=B:TERM@{seconds}",
        "--requeue",
        *sbatch_options(settings),
    ]
    start = [python or sys.executable, "-m", "grpo_tui", "job-start", str(path)]
    lines = [
        "#!/bin/bash",
        f"# grpo-tui run {folder.run_id}: submitted with `sbatch --parsable` (docs/slurm.md).",
        "# TERM comes GRACE seconds before the time limit, to this shell only: `exec` hands it to the run's own",
        "# process, which stops at the end of its step with a checkpoint. A requeued job runs this again with",
        "# SLURM_RESTART_COUNT set, and the run resumes from its newest complete checkpoint.",
        *(f"#SBATCH {option}" for option in options),
        "",
        f"export {GRACE_ENV}={seconds}",
        "# the folder the launch was made from: relative paths in the config (an environment module, a dataset,",
        "# reward function files, dotted modules) resolve against it, as they would for a run started there",
        f"cd {shlex.quote(launch_dir)} || echo {shlex.quote(_NO_LAUNCH_DIR.format(launch_dir))} >&2",
        f"exec {shlex.join(start)}",
        "",
    ]
    return "\n".join(lines)


def submit(
    folder: RunFolder, config: RunConfig, placement, env: dict | None = None, launch_dir: str | None = None
) -> str:
    """Write the script, ``sbatch --parsable`` it, record the job; returns the job id. ConfigError if refused.
    ``launch_dir``: where the job starts (default: the current folder)."""
    script = folder.path / SCRIPT
    launch_dir = launch_dir or os.getcwd()
    try:
        text = job_script(folder, config, launch_dir=launch_dir)
    except ConfigError as exc:
        _refused(folder, str(exc))
        raise
    script.parent.mkdir(mode=0o700, exist_ok=True)
    script.write_text(text)
    os.chmod(script, 0o700)
    folder.write_state(executor="slurm", placement=placement.to_dict(), slurm_script=str(SCRIPT), launch_dir=launch_dir)
    try:
        done = subprocess.run(
            ["sbatch", "--parsable", str(script)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=folder.path,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        _refused(folder, "sbatch is not installed here")
        raise ConfigError(
            "slurm", "sbatch is not on this machine's PATH: launch --slurm from a Slurm login node (or --host LOGIN)"
        ) from None
    except subprocess.TimeoutExpired:
        _refused(folder, "sbatch gave no answer within 60s")
        raise ConfigError("slurm", "sbatch gave no answer within 60s: is the Slurm controller up?") from None
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        _refused(folder, said[-1] if said else f"sbatch exited with {done.returncode}")
        raise ConfigError(
            "slurm",
            f"Slurm refused the job: {said[-1] if said else done.returncode}. The script is "
            f"{script}; fix the slurm settings (partition, time, sbatch_args) and launch again.",
        )
    job = done.stdout.strip().split(";")[0]
    if not valid_job_id(job):  # recorded, it would be passed to scancel and scontrol later
        _refused(folder, f"sbatch --parsable printed {job!r}, not a job id")
        raise ConfigError(
            "slurm",
            f"run {folder.run_id}: sbatch --parsable printed {job!r}, not a Slurm job id "
            "(digits, or digits_digits); is `sbatch` on PATH the real one? Check the queue with "
            "`squeue --me` and cancel a job it may have submitted.",
        )
    folder.write_state(slurm_job_id=job)
    QUEUE.forget()
    return job


def node_gpus(folder: RunFolder) -> list[int] | None:
    """The GPUs a Slurm run's next job is planned on (its ``gpus_per_node``: the login node's own GPUs say nothing
    of a compute node's); None for a run that is not a Slurm job, which is planned on this machine's."""
    if job_of(folder.read_state()) is None:
        return None
    settings = folder.read_config().get("slurm")
    count = settings.get("gpus_per_node") if isinstance(settings, dict) else None
    return list(range(count)) if isinstance(count, int) and count > 0 else []


def resubmit(folder: RunFolder, placement) -> str:
    """A resumed leg of a Slurm run (``launch --resume``, ``rollback``) as a new job of the run's script, written
    again from its config.yaml (the leg's settings) and started in the folder of the first launch: the leg trains
    on a compute node, under the scheduler's limits and signals, never on the login node. The resume is already
    applied (state.json: ``starting``, and which checkpoint it goes on from; the queue says ``queued`` while the job
    waits); job-start then runs it as a first attempt. Returns the new job id, which replaces the old one in
    state.json; ConfigError if Slurm refuses it (the run is ``failed`` then, with sbatch's message)."""
    state = folder.read_state()
    launch_dir = state.get("launch_dir") if isinstance(state.get("launch_dir"), str) else None
    return submit(folder, RunConfig.load(folder.config_file), placement, launch_dir=launch_dir)


def _refused(folder: RunFolder, reason: str) -> None:
    folder.write_state(status=Status.FAILED, exit_reason=f"not submitted: {reason}")
