"""A run over several machines, played on one: two roots on 127.0.0.1 (machine ranks 0 and 1), one CPU rank each.

Only machine 0's root and global rank 0 write the run's record; a stop reaches both machines' ranks through
the run folder's stop file and all of them stop in the same step. The roots are real subprocesses of
``python -m trainer_core run``, the way a Slurm job with ``--nodes 2`` starts them, one per node.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from grpo_tui.services.lifecycle.supervisor import create_run
from trainer_core.contract.config.placement import Placement
from trainer_core.contract.config.ports import free_port
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import Metrics, RunFinished, RunStarted, StopRequested
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import run_env, spawn_logged
from trainer_core.contract.run.status import Status
from trainer_core.root.run_root import machine_log, machine_rank_of, worker_command

from ..helpers import EXAMPLES, events_of, wait_for


def two_machines(port: int, **extra) -> Placement:
    return Placement(
        **{"num_processes": 1, "num_machines": 2, "main_process_ip": "127.0.0.1", "main_process_port": port, **extra}
    )


def run_processes(folder: RunFolder) -> list[psutil.Process]:
    """Every process whose command line names the run folder (the roots, the launchers, the ranks)."""
    target = str(folder.path)
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if (
                proc.pid != os.getpid()
                and any(target in part for part in proc.info["cmdline"] or [])
                and proc.status() != psutil.STATUS_ZOMBIE
            ):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def kill_all(folder: RunFolder, roots: list[subprocess.Popen]) -> None:
    for root in roots:
        if root.poll() is None:
            try:
                os.killpg(root.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    procs = run_processes(folder)
    for proc in procs:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=10)
    for root in roots:
        root.wait(timeout=10)


@contextmanager
def started_roots(folder: RunFolder, placement: Placement, *, machine_rank_flags=("0", "1"), extra_env=None):
    """The two roots, started as a job step would start them; whatever is left is killed on the way out."""
    roots: list[subprocess.Popen] = []
    try:
        for flag in machine_rank_flags:
            cmd = [
                sys.executable,
                "-m",
                "trainer_core",
                "run",
                str(folder.path),
                "--placement",
                json.dumps(placement.to_dict()),
                "--machine-rank",
                flag,
            ]
            rank = machine_rank_of(flag, extra_env or {})
            env = run_env(folder.path, extra_env)
            roots.append(spawn_logged(cmd, machine_log(folder, rank), env, new_session=True))
        yield roots
    finally:
        kill_all(folder, roots)


def create(tiny_model, runs_dir: Path, max_steps: int) -> RunFolder:
    config = RunConfig(
        model=tiny_model,
        rl_env_module=str(EXAMPLES / "pattern_env.py"),
        rl_env_class="PatternEnv",
        rl_num_generations=4,
        batch_size=4,
        rl_max_new_tokens=12,
        lr=2e-3,
        save_steps=1000,
        max_steps=max_steps,
    )
    folder, _ = create_run(config, runs_dir, num_processes=2)  # checked for the run's world size: 2 ranks
    return folder


def metrics_steps(folder: RunFolder) -> list[int]:
    return [e.step for e in events_of(folder.path) if isinstance(e, Metrics)]


def why(folder: RunFolder) -> str:
    logs = [folder.log_file, machine_log(folder, 1)]
    return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in logs if p.exists())


def assert_one_record(folder: RunFolder, roots: list[subprocess.Popen], port: int) -> list:
    events = events_of(folder.path)
    types = [e.type for e in events]
    assert types.count("run_started") == 1 and types.count("run_finished") == 1, types
    assert isinstance(events[0], RunStarted) and events[0].world_size == 2
    state = folder.read_state()
    assert state["root_pid"] == roots[0].pid  # machine 1's root never wrote its pid over machine 0's
    assert state["placement"] == two_machines(port).to_dict()  # machine_rank 0: the root that wrote it
    command = state["command"]
    assert command[command.index("--num_processes") + 1] == "2" and command[command.index("--machine_rank") + 1] == "0"
    return events


@pytest.mark.slow
def test_two_machines_write_one_record_and_stop_in_the_same_step(tiny_model, runs_dir):
    folder = create(tiny_model, runs_dir, max_steps=500)
    port = free_port()
    with started_roots(
        folder, two_machines(port), machine_rank_flags=("0", "slurm"), extra_env={"SLURM_NODEID": "1"}
    ) as roots:
        wait_for(lambda: len(metrics_steps(folder)) >= 2 or any(r.poll() is not None for r in roots), timeout=240)
        assert all(r.poll() is None for r in roots), why(folder)
        roots[0].send_signal(signal.SIGTERM)
        codes = [r.wait(timeout=180) for r in roots]
        events = assert_one_record(folder, roots, port)
        final = events[-1]
        assert isinstance(final, RunFinished) and final.status is Status.STOPPED, why(folder)
        assert "SIGTERM" in final.reason
        assert [e for e in events if isinstance(e, StopRequested)]
        # only global rank 0 wrote, and nothing after the step at which every rank stopped
        assert metrics_steps(folder) == list(range(1, final.step + 1)) and final.step < 500
        checkpoint = folder.checkpoints_dir / f"checkpoint-{final.step}"
        assert checkpoint.is_dir(), why(folder)
        # each rank saves its RNG state into the checkpoint of the step it stopped at: both were there
        assert {p.name for p in checkpoint.glob("rng_state_*.pth")} == {"rng_state_0.pth", "rng_state_1.pth"}
        assert folder.read_state()["status"] == "stopped" and folder.read_state()["last_step"] == final.step
        assert machine_log(folder, 1).exists()
        wait_for(lambda: not run_processes(folder), timeout=30)
    assert codes == [3, 3], f"root exit codes {codes}: a graceful stop exits 3 on every machine\n{why(folder)}"


@pytest.mark.slow
def test_two_machines_run_to_completion(tiny_model, runs_dir):
    folder = create(tiny_model, runs_dir, max_steps=4)
    port = free_port()
    with started_roots(folder, two_machines(port)) as roots:
        codes = [r.wait(timeout=300) for r in roots]
        events = assert_one_record(folder, roots, port)
        final = events[-1]
        assert isinstance(final, RunFinished) and final.status is Status.COMPLETED, why(folder)
        assert metrics_steps(folder) == [1, 2, 3, 4] and final.step == 4
        assert codes == [0, 0], why(folder)
        wait_for(lambda: not run_processes(folder), timeout=30)


def test_the_launcher_of_two_machines_gets_the_total_and_machine_zeros_address():
    cmd = worker_command(
        Path("/r"), 2, port=29501, python="py", num_machines=3, machine_rank=1, main_process_ip="10.0.0.1"
    )
    assert cmd == [
        "py",
        "-m",
        "accelerate.commands.launch",
        "--num_processes",
        "6",
        "--num_machines",
        "3",
        "--machine_rank",
        "1",
        "--main_process_ip",
        "10.0.0.1",
        "--main_process_port",
        "29501",
        "--multi_gpu",
        "-m",
        "trainer_core",
        "worker",
        "/r",
        "--echo",
    ]
    one = worker_command(
        Path("/r"), 1, port=29501, python="py", num_machines=2, machine_rank=0, main_process_ip="10.0.0.1"
    )
    assert one[one.index("--num_processes") + 1] == "2" and "--multi_gpu" in one
    assert worker_command(Path("/r"), 1, python="py") == ["py", "-m", "trainer_core", "worker", "/r", "--echo"]


def test_placements_keep_their_machines_and_old_records_are_one_machine():
    placement = two_machines(29501, train_gpus=[0, 1], num_processes=2)
    assert Placement.from_dict(placement.to_dict()) == placement and placement.total_processes == 4
    old = {"train_gpus": [1, 2], "server_gpus": [0], "num_processes": 2}
    assert Placement.from_dict(old).to_dict() == old and Placement.from_dict(old).num_machines == 1
    with pytest.raises(ValueError, match="main_process_ip"):
        Placement(num_machines=2)
    with pytest.raises(ValueError, match="machine_rank must be between 0 and num_machines - 1"):
        placement.for_machine(2)
    with pytest.raises(ValueError, match="SLURM_NODEID"):
        machine_rank_of("slurm", {})
    assert machine_rank_of("slurm", {"SLURM_NODEID": "3"}) == 3


def _follower(folder: RunFolder, placement: Placement, launcher: str, linger: float = 0.5) -> subprocess.Popen:
    """Machine 1's root with a stand-in launcher (``launcher`` is Python code) and a short linger."""
    code = (
        "import sys; import trainer_core.root.run_root as r; "
        f"r.LINGER_S = {linger}; r.POLL_S = 0.1; "
        f"r.placement_command = lambda *a, **k: [sys.executable, '-c', {launcher!r}]; "
        "sys.exit(r.main(sys.argv[1:]))"
    )
    cmd = [
        sys.executable,
        "-c",
        code,
        str(folder.path),
        "--placement",
        json.dumps(placement.to_dict()),
        "--machine-rank",
        "1",
    ]
    return spawn_logged(cmd, machine_log(folder, 1), run_env(folder.path), new_session=True)


def test_machine_ones_root_records_nothing_and_exits_with_its_launchers_code(runs_dir):
    folder = RunFolder.create(runs_dir)
    folder.write_state(status=Status.STARTING)
    before = folder.state_file.read_bytes()
    root = _follower(folder, two_machines(free_port()), "import sys; sys.exit(7)")
    try:
        assert root.wait(timeout=60) == 7, machine_log(folder, 1).read_text()
        assert folder.state_file.read_bytes() == before
        assert not folder.events_file.exists() and not folder.stop_file.exists()
    finally:
        kill_all(folder, [root])


def test_machine_ones_root_passes_a_signal_on_as_a_stop_request_and_ends_ranks_that_outlive_the_run(runs_dir):
    folder = RunFolder.create(runs_dir)
    folder.write_state(status=Status.STOPPED, ended=1.0)  # a previous leg's end: not this leg's
    root = _follower(folder, two_machines(free_port()), "import time; time.sleep(600)")
    try:
        wait_for(
            lambda: any("time.sleep(600)" in " ".join(p.cmdline()) for p in psutil.Process(root.pid).children()),
            timeout=60,
        )
        time.sleep(1.5)  # longer than the linger: the stale end did not end the launcher
        assert root.poll() is None
        folder.write_state(status=Status.STARTING, ended=None)
        root.send_signal(signal.SIGTERM)
        wait_for(folder.stop_file.exists, timeout=30)
        assert json.loads(folder.stop_file.read_text())["reason"] == "SIGTERM received"
        assert root.poll() is None  # several ranks: the first signal asks, it does not kill
        folder.write_state(status=Status.STOPPED, ended=2.0)  # machine 0 recorded the end; these ranks linger
        assert root.wait(timeout=60) == 3  # the end on record (stopped), not the launcher's code for its killed ranks
        assert folder.read_state()["ended"] == 2.0 and not folder.events_file.exists()
        wait_for(lambda: not run_processes(folder), timeout=30)
    finally:
        kill_all(folder, [root])
