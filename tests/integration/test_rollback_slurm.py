"""``grpo-tui rollback`` of a run submitted to Slurm (the real single-node cluster of tests/slurm_cluster.py): the
resumed leg is a new batch job of the run's script, started in the folder of the first launch, not a process on the
login node; the rewind is recorded. Here, and on a login node reached with ``--host`` (tests/sshd.py). One 4-step
run of the tiny model is trained as a job; each test rolls back its own copy of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT, cli, events_of, wait_for
from tests.remote_hosts import RemoteHosts
from tests.slurm_cluster import slurm  # noqa: F401
from tests.sshd import sshd  # noqa: F401
from trainer_core.contract.run.events import Metrics, Rewound, RunStarted

from .test_slurm_runs import row, state, submit

pytestmark = pytest.mark.slow

FIRST_LR, NEW_LR = 1e-5, 3e-5


@pytest.fixture(scope="module")
def finished_job(slurm, tiny_model, tmp_path_factory) -> tuple[Path, str]:  # noqa: F811
    """A completed 4-step Slurm run (checkpoints at 2 and 4, launched from the checkout) and its job id."""
    runs = tmp_path_factory.mktemp("slurm-rollback")
    _, job, folder = submit(
        slurm, tiny_model, runs, "--rl-max-new-tokens", "8", "--max-steps", "4", "--save-steps", "2",
        "--lr", str(FIRST_LR),
    )  # fmt: skip
    wait_for(lambda: state(folder).get("status") == "completed", 240, 0.5, what="the Slurm run to complete")
    wait_for(lambda: slurm.squeue_state(job) is None, 60, 0.5, what=f"job {job} to leave the queue")
    return folder, job


def copy_into(finished: Path, runs: Path) -> Path:
    runs.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copytree(finished, runs / finished.name))


def rewind_of(folder: Path) -> Rewound:
    events = events_of(folder)
    [rewind] = [e for e in events if isinstance(e, Rewound)]
    assert [e.step for e in events[events.index(rewind) :] if isinstance(e, Metrics)] == [3, 4]
    starts = [e for e in events if isinstance(e, RunStarted)]
    assert len(starts) == 2 and starts[1].resumed_from == "checkpoints/checkpoint-2"
    return rewind


def test_rollback_of_a_slurm_run_submits_the_resumed_leg_as_a_job(slurm, finished_job, tmp_path):  # noqa: F811
    runs = tmp_path / "runs"
    folder, first_job = finished_job
    folder = copy_into(folder, runs)
    done = cli(
        "rollback", folder.name, "--runs-dir", str(runs), "--to", "2", "--set", f"lr={NEW_LR}",
        "--reason", "kl spike after step 2", "--json", env=slurm.env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "from checkpoints/checkpoint-2 to step 4; steps 3-4 are trained again" in done.stderr
    started = json.loads(done.stdout)
    job = started["slurm_job_id"]
    assert started["run_id"] == folder.name and job != first_job and state(folder)["slurm_job_id"] == job
    # the job goes where the first launch was made, whatever folder the rollback was typed in
    assert f"cd {ROOT} || echo " in (folder / "slurm" / "job.sbatch").read_text()
    wait_for(lambda: state(folder).get("status") == "completed", 240, 0.5, what="the rolled-back leg to complete")
    assert (folder / "slurm" / f"slurm-{job}.out").exists()  # the leg ran in the new job
    assert state(folder)["slurm_restart"] == 0 and row(slurm, runs, folder.name)["status"] == "completed"

    rewind = rewind_of(folder)
    assert (rewind.from_step, rewind.to_step, rewind.checkpoint, str(rewind.by), rewind.reason) == (
        4,
        2,
        "checkpoint-2",
        "user",
        "kl spike after step 2",
    )
    assert rewind.changes == {"lr": {"from": FIRST_LR, "to": NEW_LR}} and rewind.revision == 1
    assert yaml.safe_load((folder / "config.yaml").read_text())["lr"] == NEW_LR


def test_rollback_through_a_login_node_over_ssh(slurm, sshd, finished_job):  # noqa: F811
    hosts = RemoteHosts(sshd, remote_env={"SLURM_CONF": slurm.env["SLURM_CONF"]})  # the login node's Slurm
    try:
        folder, first_job = finished_job
        folder = copy_into(folder, hosts.runs / "gpubox")
        done = hosts.cli(
            "rollback", folder.name, "--host", "gpubox", "--to", "2", "--set", "max_grad_norm=0.5",
            "--reason", "grad spikes", "--json",
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        job = json.loads(done.stdout)["slurm_job_id"]
        assert job != first_job and state(folder)["slurm_job_id"] == job
        wait_for(lambda: state(folder).get("status") == "completed", 240, 0.5, what="the rolled-back leg to end")
        assert (folder / "slurm" / f"slurm-{job}.out").exists()
        rewind = rewind_of(folder)
        assert (rewind.to_step, str(rewind.by), rewind.reason) == (2, "user", "grad spikes")
        assert set(rewind.changes) == {"max_grad_norm"} and rewind.changes["max_grad_norm"]["to"] == 0.5
        rows = json.loads(hosts.cli("runs", "--host", "gpubox", "--json").stdout)
        assert [(r["run_id"], r["status"]) for r in rows] == [(folder.name, "completed")]
    finally:
        hosts.close()
