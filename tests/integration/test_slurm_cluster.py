"""The Slurm fixture is a real cluster: batch jobs run, pend for resources, get a signal before their limit, requeue."""

from __future__ import annotations

from pathlib import Path

import psutil

from tests.helpers import wait_for
from tests.slurm_cluster import SlurmCluster, slurm  # noqa: F401


def _script(folder: Path, body: str, *directives: str) -> tuple[Path, Path]:
    """A batch script that appends its output to a file of its own; returns (script, output)."""
    script, output = folder / "job.sh", folder / "job.out"
    header = [
        "#!/bin/bash",
        f"#SBATCH --output={output}",
        "#SBATCH --open-mode=append",
        *(f"#SBATCH {directive}" for directive in directives),
    ]
    script.write_text("\n".join(header) + "\n" + body)
    return script, output


def _submit(cluster: SlurmCluster, *args: str) -> str:
    result = cluster.run("sbatch", "--parsable", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _alive(proc: psutil.Process) -> bool:
    """Running and not a zombie: slurmstepd is reparented to init, which may reap it a little later."""
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_batch_job_runs_and_writes_its_output(slurm, tmp_path):  # noqa: F811
    script, output = _script(tmp_path, 'echo "$SLURM_JOB_ID $SLURM_RESTART_COUNT"\n')
    job_id = _submit(slurm, str(script))
    assert job_id.isdigit()
    assert slurm.wait_state(job_id, {"COMPLETED", "FAILED", "CANCELLED"}) == "COMPLETED"
    assert slurm.squeue_state(job_id) is None
    assert slurm.job_info(job_id)["ExitCode"] == "0:0"
    # the first run has no restart count at all
    assert _lines(output) == [f"{job_id} "]


def test_job_pends_for_resources_until_the_one_holding_them_ends(slurm):  # noqa: F811
    big = _submit(slurm, "-c", str(slurm.cpus), "--output=/dev/null", "--wrap=sleep 60")
    slurm.wait_state(big, {"RUNNING"})
    small = _submit(slurm, "-c", "1", "--output=/dev/null", "--wrap=sleep 60")
    reason = lambda: slurm.run("squeue", "-h", "-j", small, "-o", "%r").stdout.strip() == "Resources"  # noqa: E731
    wait_for(reason, 10, 0.2, what="the second job to pend for Resources")
    assert slurm.squeue_state(small) == "PENDING"

    assert slurm.run("scancel", big).returncode == 0
    slurm.wait_state(small, {"RUNNING"}, timeout=15)
    assert slurm.run("scancel", small).returncode == 0
    assert slurm.wait_state(big, {"CANCELLED"}) == "CANCELLED"


def test_batch_shell_gets_term_ahead_of_the_time_limit(slurm, tmp_path):  # noqa: F811
    body = "trap 'echo got TERM; exit 0' TERM\necho started\nsleep 120 &\nwait\n"
    script, output = _script(tmp_path, body, "--time=1", "--signal=B:TERM@50")
    job_id = _submit(slurm, str(script))
    slurm.wait_state(job_id, {"RUNNING"})
    # slurmctld checks time limits every 30 s and signals jobs whose limit is within @50 + 30 s of that check, so TERM
    # comes at the first check after the start: up to 30 s later, not 10 s
    wait_for(lambda: "got TERM" in _lines(output), 40, 0.2, what="the batch shell to get TERM")
    assert slurm.wait_state(job_id, {"COMPLETED", "FAILED", "TIMEOUT"}) == "COMPLETED"


def test_requeued_job_runs_again_with_its_restart_count(slurm, tmp_path):  # noqa: F811
    script, output = _script(tmp_path, 'echo "$SLURM_JOB_ID ${SLURM_RESTART_COUNT:-0}"\nsleep 300\n', "--requeue")
    job_id = _submit(slurm, str(script))
    wait_for(lambda: _lines(output), 15, 0.2, what="the job to start")

    assert slurm.run("scontrol", "requeue", job_id).returncode == 0
    slurm.wait_state(job_id, {"PENDING"}, timeout=20)
    # a requeued job waits for its BeginTime, about two minutes away
    assert slurm.job_info(job_id)["Reason"] == "BeginTime"
    update = slurm.run("scontrol", "update", f"JobId={job_id}", "StartTime=now")
    assert update.returncode == 0, update.stderr
    runs = lambda: [line for line in _lines(output) if line.startswith(f"{job_id} ")]  # noqa: E731
    wait_for(lambda: len(runs()) == 2, 20, 0.2, what="the requeued job to run again")
    assert runs() == [f"{job_id} 0", f"{job_id} 1"]
    # slurmstepd notes the requeue in the job's output, between the two runs
    assert f"*** JOB {job_id} ON {slurm.node} CANCELLED AT" in output.read_text()
    assert slurm.job_info(job_id)["Restarts"] == "1"
    assert slurm.run("scancel", job_id).returncode == 0


def test_stop_leaves_nothing_of_the_cluster_behind(slurm, tmp_path):  # noqa: F811
    with SlurmCluster.start(cpus=2) as other:
        job_id = _submit(other, "--output=/dev/null", "--wrap=sleep 300")
        other.wait_state(job_id, {"RUNNING"})
        procs = other.processes()
        names = {proc.name() for proc in procs}
        assert {"munged", "slurmctld", "slurmd", "slurmstepd", "sleep"} <= names, names
        other.stop()
        other.stop()
    assert not [proc for proc in procs if _alive(proc)]
    assert not other.dir.exists()
    # the module's cluster is another one and still works
    assert slurm.run("sinfo", "-h", "-n", slurm.node, "-o", "%T").stdout.strip() == "idle"
