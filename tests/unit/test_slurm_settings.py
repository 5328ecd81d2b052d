"""Slurm settings and the batch script: the checks name the fix, and nothing user-given becomes shell code."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from grpo_tui.services.slurm.batch import job_script
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.config.slurm_settings import sbatch_options, slurm_problems
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.slurm_job import PREEMPTED, TIME_LIMIT, stop_reason


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"partiton": "gpu"}, "unknown setting 'partiton'. Did you mean 'partition'?"),
        ({"time": "12h"}, "slurm time must be minutes (e.g. 90) or [D-]HH:MM:SS"),
        ({"nodes": 0}, "slurm nodes must be a whole number, at least 1; got 0."),
        ({"gpus_per_node": -1}, "slurm gpus_per_node must be a whole number, 0 or more"),
        ({"sbatch_args": ["--account=a\n#SBATCH --uid=0"]}, "each one line starting with '-'"),
        ({"sbatch_args": "--account=a"}, "must be a list of sbatch options"),
        ({"partition": "gpu; rm -rf"}, "slurm partition must be a partition name"),
        ("gpu", "slurm must be a mapping"),
        ({"time": 2}, "slurm grace (300 s, the default) must be shorter than the time limit (120 s)"),
        ({"time": "10:00", "grace": 600}, "slurm grace (600 s) must be shorter than the time limit (600 s)"),
    ],
)
def test_bad_settings_are_named_with_the_fix(settings, message):
    problems = slurm_problems(settings)
    assert len(problems) == 1 and message in problems[0]


def test_slurm_times_are_read_as_slurm_reads_them():
    from trainer_core.contract.config.slurm_settings import time_seconds

    assert [time_seconds(t) for t in (90, "90", "10:30", "1:00:00", "2-0", "2-01:30", "1-00:00:10")] == [
        5400,
        5400,
        630,
        3600,
        172800,
        178200,
        86410,
    ]


def test_good_settings_become_sbatch_options():
    settings = {
        "partition": "gpu",
        "time": "1-12:00:00",
        "nodes": 2,
        "gpus_per_node": 4,
        "sbatch_args": ["--account=lab", "--comment=$(touch /tmp/owned)"],
    }
    assert slurm_problems(settings) == [] and slurm_problems({"time": 90}) == []
    assert sbatch_options(settings) == [
        "--partition=gpu",
        "--time=1-12:00:00",
        "--nodes=2",
        "--gpus-per-node=4",
        "--account=lab",
        "--comment=$(touch /tmp/owned)",
    ]


def test_the_script_quotes_its_command_and_keeps_options_out_of_the_shell(tmp_path):
    runs = tmp_path / "runs with 'quotes' and $(touch owned)"
    folder = RunFolder.create(runs)
    config = RunConfig(slurm={"time": 5, "grace": 40, "sbatch_args": ["--comment=$(touch owned)"]})
    script = job_script(folder, config, python="/opt/py thon/bin/python")
    lines = script.splitlines()
    assert "#SBATCH --signal=B:TERM@40" in lines and "#SBATCH --time=5" in lines
    assert "#SBATCH --comment=$(touch owned)" in lines  # read by sbatch, never by a shell
    exec_line = next(line for line in lines if line.startswith("exec "))
    assert shlex.split(exec_line)[1:] == [
        "/opt/py thon/bin/python",
        "-m",
        "grpo_tui",
        "job-start",
        str(folder.path.resolve()),
    ]
    path = tmp_path / "job.sbatch"
    path.write_text(script.replace("exec ", "printf '%s\\n' ", 1))
    out = subprocess.run(["bash", str(path)], capture_output=True, text=True, cwd=tmp_path, check=True).stdout
    assert out.splitlines()[-1] == str(folder.path.resolve()) and not (tmp_path / "owned").exists()


def test_a_term_near_the_end_is_the_time_limit_and_any_other_a_preemption():
    assert stop_reason(end_time=1000.0, grace=60, now=930.0) == TIME_LIMIT
    assert stop_reason(end_time=1000.0, grace=60, now=800.0) == PREEMPTED
    assert stop_reason(end_time=None, grace=60, now=800.0) == PREEMPTED


def test_several_nodes_start_one_root_per_node_through_srun(tmp_path):
    import json

    from grpo_tui.cli.job_start import node_command
    from trainer_core.contract.config.placement import Placement

    folder = RunFolder.create(tmp_path)
    one = node_command(folder, Placement(num_processes=2), 1, "node-a", 29500)
    assert one[1:4] == ["-m", "trainer_core", "run"] and "srun" not in one
    cmd = node_command(folder, Placement(num_processes=2), 3, "node-a", 29500)
    assert cmd[:4] == ["srun", "--ntasks-per-node=1", "--nodes=3", "--kill-on-bad-exit=1"]
    assert cmd[-2:] == ["--machine-rank", "slurm"]
    placement = json.loads(cmd[cmd.index("--placement") + 1])
    assert (placement["num_machines"], placement["main_process_ip"], placement["main_process_port"]) == (
        3,
        "node-a",
        29500,
    )
    assert Placement.from_dict(placement).total_processes == 6
