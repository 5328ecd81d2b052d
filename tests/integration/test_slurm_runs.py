"""Runs on a real single-node Slurm (tests/slurm_cluster.py): submit, queue, stop, time limit, requeue, --host."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import PATTERN_FLAGS, cli, events_of, wait_for
from tests.remote_hosts import RemoteHosts
from tests.slurm_cluster import slurm  # noqa: F401
from tests.sshd import sshd  # noqa: F401
from trainer_core.contract.run.events import Metrics, RunStarted

pytestmark = pytest.mark.slow


def submit(slurm, tiny_model, runs_dir, *extra):  # noqa: F811
    done = cli(
        "launch",
        "--slurm",
        "--model",
        tiny_model,
        *PATTERN_FLAGS,
        "--runs-dir",
        str(runs_dir),
        "--json",
        *extra,
        env=slurm.env,
    )
    assert done.returncode == 0, done.stderr
    started = json.loads(done.stdout)
    return started["run_id"], started["slurm_job_id"], runs_dir / started["run_id"]


def state(folder) -> dict:
    return json.loads((folder / "state.json").read_text())


def row(slurm, runs_dir, run_id) -> dict:  # noqa: F811
    rows = json.loads(cli("runs", "--runs-dir", str(runs_dir), "--json", env=slurm.env).stdout)
    return next(r for r in rows if r["run_id"] == run_id)


def processes_of(slurm, folder):  # noqa: F811
    return [p for p in slurm.processes() if any(str(folder) in part for part in p.cmdline())]


def test_a_submitted_run_completes_and_its_script_says_how(slurm, tiny_model, tmp_path):  # noqa: F811
    run_id, job, folder = submit(slurm, tiny_model, tmp_path / "runs", "--max-steps", "4", "--partition", "debug")
    script = (folder / "slurm" / "job.sbatch").read_text()
    assert "#SBATCH --signal=B:TERM@300" in script and "#SBATCH --requeue" in script
    assert "#SBATCH --open-mode=append" in script and "#SBATCH --partition=debug" in script
    assert re.search(r"^exec .* -m grpo_tui job-start ", script, re.M)
    assert state(folder)["slurm_job_id"] == job
    wait_for(lambda: state(folder).get("status") == "completed", timeout=180)
    assert [e.step for e in events_of(folder) if isinstance(e, Metrics)] == [1, 2, 3, 4]
    assert row(slurm, tmp_path / "runs", run_id)["status"] == "completed"
    assert (folder / "slurm" / f"slurm-{job}.out").exists()


def test_queued_then_stopped_in_the_queue_and_a_running_job_stopped_gracefully(slurm, tiny_model, tmp_path):  # noqa: F811
    runs = tmp_path / "runs"
    big, big_job, big_folder = submit(
        slurm,
        tiny_model,
        runs,
        "--max-steps",
        "3000",
        "--save-steps",
        "1000",
        f"--sbatch-arg=--cpus-per-task={slurm.cpus}",
    )
    waiting, _, waiting_folder = submit(slurm, tiny_model, runs, "--max-steps", "3")
    wait_for(lambda: row(slurm, runs, waiting)["queue_reason"] == "Resources", timeout=60, interval=1)
    assert row(slurm, runs, waiting)["status"] == "queued"
    table = cli("runs", "--runs-dir", str(runs), env={**slurm.env, "COLUMNS": "200"}).stdout
    assert re.search(rf"{waiting}.*queued \(Resources\)", table), table

    cancelled = cli("stop", waiting, "--runs-dir", str(runs), env=slurm.env)
    assert cancelled.returncode == 0 and "cancelled while queued: it never started" in cancelled.stdout
    assert state(waiting_folder)["status"] == "stopped"

    wait_for(lambda: len([e for e in events_of(big_folder) if isinstance(e, Metrics)]) >= 3, timeout=180)
    stopped = cli("stop", big, "--runs-dir", str(runs), env=slurm.env, timeout=400)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert state(big_folder)["status"] == "stopped" and "grpo-tui stop" in state(big_folder)["exit_reason"]
    assert any(p.name.startswith("checkpoint-") for p in (big_folder / "checkpoints").iterdir())
    assert slurm.squeue_state(big_job) is None
    wait_for(lambda: not processes_of(slurm, big_folder), timeout=30)


def test_the_time_limit_stops_the_run_with_a_checkpoint(slurm, tiny_model, tmp_path):  # noqa: F811
    # TERM comes 75 s before a 2-minute limit; slurmctld looks every 30 s, so 45-75 s after the start: time for
    # a loaded machine to import the training stack and log a step first, and 45 s to save a checkpoint
    run_id, _, folder = submit(
        slurm,
        tiny_model,
        tmp_path / "runs",
        "--max-steps",
        "5000",
        "--save-steps",
        "1000",
        "--time",
        "2",
        "--slurm-grace",
        "75",
    )
    wait_for(lambda: state(folder).get("status") in ("stopped", "failed", "completed"), timeout=300, interval=1)
    final = state(folder)
    assert final["status"] == "stopped" and final["exit_reason"] == "time_limit", final
    last = max(e.step for e in events_of(folder) if isinstance(e, Metrics))
    assert (folder / "checkpoints" / f"checkpoint-{last}").is_dir()
    assert row(slurm, tmp_path / "runs", run_id)["status"] == "stopped"


def test_a_requeued_job_resumes_from_its_checkpoint_in_the_same_folder(slurm, tiny_model, tmp_path):  # noqa: F811
    run_id, job, folder = submit(slurm, tiny_model, tmp_path / "runs", "--max-steps", "80", "--save-steps", "5")
    wait_for(lambda: (folder / "checkpoints" / "checkpoint-10").is_dir(), timeout=180)
    assert slurm.run("scontrol", "requeue", job).returncode == 0
    wait_for(lambda: row(slurm, tmp_path / "runs", run_id)["status"] == "queued", timeout=60, interval=0.5)
    first_end = state(folder)
    assert first_end["status"] in ("stopped", "failed"), first_end
    slurm.run("scontrol", "update", f"JobId={job}", "StartTime=now")
    wait_for(lambda: state(folder).get("status") == "completed", timeout=240, interval=1)
    final = state(folder)
    assert final["slurm_restart"] == 1 and final["restarts"] == 1 and "checkpoint-" in final["resume_from"]
    events = events_of(folder)
    starts = [e for e in events if isinstance(e, RunStarted)]
    assert len(starts) == 2 and starts[1].restart == 1 and starts[1].resumed_from == final["resume_from"]
    steps = [e.step for e in events if isinstance(e, Metrics)]
    resumed = int(final["resume_from"].rsplit("checkpoint-", 1)[1])
    cut = (
        steps.index(resumed + 1, steps.index(resumed) + 1) if steps.count(resumed + 1) > 1 else steps.index(resumed + 1)
    )
    assert steps[cut:] == list(range(resumed + 1, 81)), steps  # the second attempt continues the count


def test_launch_on_a_login_node_over_ssh(slurm, sshd, tiny_model):  # noqa: F811
    hosts = RemoteHosts(sshd, remote_env={"SLURM_CONF": slurm.env["SLURM_CONF"]})  # the login node's Slurm
    try:
        run_id = hosts.launch(tiny_model, "--slurm", "--max-steps", "3")
        folder = hosts.run_folder(run_id)
        assert state(folder)["slurm_job_id"]
        wait_for(lambda: state(folder).get("status") == "completed", timeout=180)
        rows = json.loads(hosts.cli("runs", "--host", "gpubox", "--json").stdout)
        assert [(r["run_id"], r["status"], r["host"]) for r in rows] == [(run_id, "completed", "gpubox")]
    finally:
        hosts.close()


def test_a_job_killed_without_a_word_is_lost_with_slurms_reason(slurm, tiny_model, tmp_path):  # noqa: F811
    runs = tmp_path / "runs"
    run_id, job, folder = submit(slurm, tiny_model, runs, "--max-steps", "3000", "--save-steps", "1000")
    wait_for(lambda: any(isinstance(e, Metrics) for e in events_of(folder)), timeout=180)
    # the node's kernel kills every process of the run at once (as the OOM killer or a crash would): no TERM,
    # so nothing records an end, and the job ends with its batch script
    procs = processes_of(slurm, folder)
    assert procs
    for proc in procs:
        proc.kill()
    wait_for(lambda: slurm.squeue_state(job) is None, timeout=60)
    seen = []
    try:
        listed = wait_for(
            lambda: ((r := row(slurm, runs, run_id))["status"] == "lost" and r) or seen.append(r),
            timeout=30,
            interval=1,
        )
    except AssertionError:
        raise AssertionError(f"never lost: {seen[-1:]}, state {state(folder)}") from None
    assert state(folder)["status"] in ("starting", "running")  # the folder never heard of the end
    assert listed["exit_reason"].startswith(f"Slurm job {job} ended "), listed
    wait_for(lambda: not processes_of(slurm, folder), timeout=30)


def test_relative_paths_resolve_against_the_launch_folder(slurm, tiny_model, tmp_path):  # noqa: F811
    """The job runs in the folder the launch was made from, so an environment module named relative to it is
    found on the node, as it would be by a run started there (a dataset or reward file likewise)."""
    import shutil

    from tests.helpers import EXAMPLES

    project = tmp_path / "my project"
    (project / "envs").mkdir(parents=True)
    shutil.copy(EXAMPLES / "pattern_env.py", project / "envs" / "pattern_env.py")
    flags = [*PATTERN_FLAGS]
    flags[flags.index("--rl-env-module") + 1] = "envs/pattern_env.py"
    runs = tmp_path / "runs"
    done = cli(
        "launch", "--slurm", "--model", tiny_model, *flags, "--max-steps", "2", "--runs-dir", str(runs), "--json",
        env=slurm.env, cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    folder = runs / json.loads(done.stdout)["run_id"]
    assert state(folder)["launch_dir"] == str(project)
    assert f"cd '{project}' || echo " in (folder / "slurm" / "job.sbatch").read_text()
    wait_for(lambda: state(folder).get("status") in ("completed", "failed"), timeout=180)
    assert state(folder)["status"] == "completed", (folder / "trainer.log").read_text()[-2000:]
    assert [e.step for e in events_of(folder) if isinstance(e, Metrics)] == [1, 2]
