"""A real single-node Slurm cluster on this machine for tests of Slurm-backed runs.

Stand-ins for sbatch and squeue hide what matters in practice: jobs that pend for resources, signals sent ahead of
the time limit, requeued jobs that start again with a new restart count, and job states that change under the app.
``SlurmCluster`` runs munged, slurmctld and slurmd from a private temp dir with their own munge key, config, state
and logs, on free ports of 127.0.0.1, so tests start and stop a cluster without touching any system Slurm.

Every Slurm command a test runs must see ``SLURM_CONF``: pass ``cluster.env`` to subprocesses, or use ``run``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import psutil
import pytest

from trainer_core.contract.config.ports import free_port

from .helpers import wait_for

MUNGED = "/usr/sbin/munged"
SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"
BINARIES = (
    MUNGED,
    SLURMCTLD,
    SLURMD,
    "/usr/sbin/slurmstepd",
    "/usr/bin/sbatch",
    "/usr/bin/squeue",
    "/usr/bin/scancel",
    "/usr/bin/scontrol",
    "/usr/bin/sinfo",
)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _terminate(procs: list[psutil.Process]) -> None:
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=5)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=5)


class SlurmCluster:
    """munged, slurmctld and slurmd running as root from a private temp dir; one node with ``cpus`` CPUs."""

    def __init__(self, cpus: int = 4) -> None:
        self.cpus = cpus
        self.dir = Path(tempfile.mkdtemp(prefix="gsl", dir="/tmp"))
        self.dir.chmod(0o700)
        self.conf = self.dir / "slurm.conf"
        self.node = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.munge_socket = self.dir / "munge" / "munge.socket"
        self._daemons: dict[str, subprocess.Popen] = {}
        self._stopped = False

    @classmethod
    def start(cls, cpus: int = 4) -> SlurmCluster:
        cluster = cls(cpus)
        try:
            cluster._start()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def __enter__(self) -> SlurmCluster:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def _start(self) -> None:
        for sub in ("munge", "state", "spool", "log"):
            (self.dir / sub).mkdir(mode=0o700)
        key = self.dir / "munge" / "munge.key"
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "wb") as out:
            out.write(os.urandom(1024))
        self.conf.write_text(self._slurm_conf())

        munge_dir = self.dir / "munge"
        self._spawn(
            "munged",
            [
                MUNGED,
                "-F",
                "--force",
                f"--key-file={key}",
                f"--socket={self.munge_socket}",
                f"--pid-file={munge_dir / 'munged.pid'}",
                f"--log-file={munge_dir / 'munged.log'}",
                f"--seed-file={munge_dir / 'munged.seed'}",
            ],
        )
        self._wait(lambda: self.munge_socket.exists(), 10, "munged to create its socket")
        self._spawn("slurmctld", [SLURMCTLD, "-D", "-c", "-f", str(self.conf)])
        self._spawn("slurmd", [SLURMD, "-D", "-f", str(self.conf), "-N", self.node])
        self._wait(
            lambda: self.run("sinfo", "-h", "-n", self.node, "-o", "%T").stdout.strip() == "idle",
            30,
            f"node {self.node} to become idle",
        )

    def _slurm_conf(self) -> str:
        log = self.dir / "log"
        auth_info = f"socket={self.munge_socket}"
        lines = [
            "ClusterName=grpotest",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo={auth_info}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={self.dir / 'state'}",
            f"SlurmdSpoolDir={self.dir / 'spool'}",
            f"SlurmctldPidFile={self.dir / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.dir / 'slurmd.pid'}",
            f"SlurmctldLogFile={log / 'slurmctld.log'}",
            f"SlurmdLogFile={log / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "ReturnToService=2",
            "MinJobAge=300",
            "KillWait=5",
            "JobRequeue=1",
            "MpiDefault=none",
            "SlurmdParameters=config_overrides",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory=4000 State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "PartitionName=short Nodes=ALL MaxTime=10 State=UP",
        ]
        return "\n".join(lines) + "\n"

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.dir / "log" / f"{name}.out", "wb") as out:
            self._daemons[name] = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )

    def _wait(self, predicate, timeout: float, what: str) -> None:
        def ready() -> bool:
            if predicate():
                return True
            exited = [name for name, proc in self._daemons.items() if proc.poll() is not None]
            if exited:
                raise RuntimeError(f"waiting for {what}, {', '.join(exited)} exited\n{self.logs()}")
            return False

        wait_for(ready, timeout, 0.2, what=what, show=self.logs)

    def logs(self) -> str:
        """The tails of every daemon's log, for failure messages."""
        paths = sorted((self.dir / "log").glob("*")) + sorted((self.dir / "munge").glob("*.log"))
        return "\n".join(f"--- {path.name}\n{_tail(path)}" for path in paths)

    def run(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """Run a Slurm command (``sbatch``, ``squeue`` ...) against this cluster and capture its output as text."""
        return subprocess.run(
            list(argv), capture_output=True, text=True, env=self.env, timeout=timeout, stdin=subprocess.DEVNULL
        )

    def squeue_state(self, job_id: str | int) -> str | None:
        """The job's state as squeue shows it (``PENDING``, ``RUNNING`` ...); None once it left the queue."""
        result = self.run("squeue", "-h", "-j", str(job_id), "-o", "%T")
        if result.returncode:
            return None
        return result.stdout.strip() or None

    def job_info(self, job_id: str | int) -> dict[str, str]:
        """``scontrol show job`` as key=value pairs (``JobState``, ``Reason``, ``Restarts`` ...); {} if unknown."""
        result = self.run("scontrol", "show", "job", "-o", str(job_id))
        if result.returncode:
            return {}
        info: dict[str, str] = {}
        key = None
        for token in result.stdout.split():
            name, sep, value = token.partition("=")
            if sep and name.isidentifier():
                key, info[name] = name, value
            elif key is not None:
                info[key] += " " + token
        return info

    def wait_state(self, job_id: str | int, states: set[str], timeout: float = 30) -> str:
        """Wait until the job's ``JobState`` is one of ``states`` and return it."""
        seen: list[str | None] = [None]

        def state() -> str | None:
            seen[0] = self.job_info(job_id).get("JobState")
            return seen[0] if seen[0] in states else None

        return wait_for(
            state, timeout, 0.2, what=f"job {job_id} to be one of {sorted(states)}", show=lambda: f"it is {seen[0]}"
        )

    def _is_own(self, proc: psutil.Process) -> bool:
        try:
            return (
                str(self.dir) in " ".join(proc.cmdline())
                or proc.environ().get("SLURM_CONF") == str(self.conf)
                or any(file.path.startswith(f"{self.dir}/") for file in proc.open_files())
            )
        except psutil.Error:
            return False

    def processes(self) -> list[psutil.Process]:
        """Every process of this cluster: the daemons and whatever they started, with their descendants.

        slurmstepd and the jobs under it are reparented away from slurmd; they are found by ``SLURM_CONF`` in their
        environment (jobs), a temp dir path in their command line (batch scripts) or an open file in it (slurmstepd).
        """
        procs: dict[int, psutil.Process] = {}
        roots = [proc for proc in psutil.process_iter() if proc.pid != os.getpid() and self._is_own(proc)]
        for root in roots:
            with contextlib.suppress(psutil.Error):
                procs.update((proc.pid, proc) for proc in [root, *root.children(recursive=True)])
        return list(procs.values())

    def _cancel_all_jobs(self, timeout: float = 10) -> None:
        self.run("scancel", "--user", pwd.getpwuid(os.getuid()).pw_name, timeout=timeout)
        with contextlib.suppress(AssertionError):  # best effort: the daemons are stopped next all the same
            wait_for(
                lambda: not self.run("squeue", "-h", "-o", "%i", timeout=timeout).stdout.strip(),
                timeout,
                0.2,
                what="the cancelled jobs to leave the queue",
            )

    def stop(self) -> None:
        """Cancel every job, end the daemons and everything they started, and remove the temp dir. Safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        controller = self._daemons.get("slurmctld")
        if controller is not None and controller.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._cancel_all_jobs()
        _terminate(self.processes())
        for popen in self._daemons.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                popen.wait(timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def slurm():
    """A started ``SlurmCluster`` with 4 CPUs, shared by the tests of one module."""
    missing = [path for path in BINARIES if not os.path.exists(path)]
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: install slurm-wlm and munge; ./dev test does it as root")
    cluster = SlurmCluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
