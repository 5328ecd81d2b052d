"""``grpo-tui job-start RUN_DIR``: what a Slurm batch script runs (``services/slurm/batch.py``), not typed by people.

It records the job in the run's state (its id, which restart this is, when its time limit falls), resumes
the run from its newest complete checkpoint when Slurm restarted the job (``SLURM_RESTART_COUNT`` > 0),
plans the placement on the node it landed on, and ``exec``s the run's root process so the scheduler's
signals reach it directly.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import replace
from pathlib import Path

import trainer_core.contract.run.slurm_job as slurm_job
from grpo_tui.services.lifecycle.supervisor import prepare_resume, root_command
from grpo_tui.services.machine.gpus import visible_indices
from trainer_core.contract.config.placement import plan
from trainer_core.contract.config.ports import free_port
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import EXIT_BAD_INPUT, Status


def register(sub) -> None:
    parser = sub.add_parser(
        "job-start",  # no help: not listed, it is for batch scripts
        description="Start a run inside its Slurm batch job (the job's script runs this).",
    )
    parser.add_argument("run_dir", type=Path)
    parser.set_defaults(handler=run)


def run(args) -> int:
    folder = RunFolder(args.run_dir)
    job = slurm_job.job_id()
    if job is None:
        print(
            "error: job-start runs inside a Slurm job (SLURM_JOB_ID is not set); use grpo-tui launch --slurm",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    restart = slurm_job.restart_count()
    state = folder.read_state()
    status = Status.parse(state.get("status"))
    facts = {
        "slurm_job_id": job,
        "slurm_restart": restart,
        "slurm_node": socket.gethostname(),
        "slurm_end_time": slurm_job.job_end_time(job),
    }
    if restart and status is not None and status.is_live and status is not Status.QUEUED:
        # the previous attempt was killed before it could record its end (KillWait was too short for a save)
        folder.write_state(status=Status.FAILED, exit_reason="killed by Slurm before it recorded its end")
        status = Status.FAILED
    if status is not None and status.is_final:
        try:
            placement = prepare_resume(folder)
        except ConfigError as exc:
            folder.write_state(**facts)
            print(f"error: restart {restart} of job {job} cannot resume run {folder.run_id}: {exc}", file=sys.stderr)
            return 1
        print(
            f"restart {restart} of job {job}: run {folder.run_id} resumes from {folder.read_state().get('resume_from')}",
            flush=True,
        )
    else:
        config = RunConfig.load(folder.config_file)
        placement = plan(config, visible_indices())
        folder.write_state(status=Status.STARTING)
    folder.write_state(**facts)
    nodes = RunConfig.load(folder.config_file).slurm.get("nodes") or 1
    cmd = node_command(folder, placement, nodes, socket.gethostname(), free_port())
    sys.stdout.flush()
    os.execvp(cmd[0], cmd)
    return 0  # not reached


def node_command(folder: RunFolder, placement, nodes: int, first_node: str, port: int) -> list[str]:
    """The run's root on this node, or with several nodes one root per node through ``srun``, each taking its
    machine rank from ``$SLURM_NODEID`` and meeting the others at this (the job's first) node."""
    if nodes <= 1:
        return root_command(folder, placement)
    placement = replace(
        placement, num_machines=nodes, machine_rank=0, main_process_ip=first_node, main_process_port=port
    )
    return [
        "srun",
        "--ntasks-per-node=1",
        f"--nodes={nodes}",
        "--kill-on-bad-exit=1",
        *root_command(folder, placement),
        "--machine-rank",
        "slurm",
    ]
