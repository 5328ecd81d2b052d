"""The root process of a run: places it, starts what it needs, and always records how it ended.

``python -m trainer_core run RUN_DIR --placement JSON`` is what ``grpo-tui launch`` detaches and what
``grpo-tui train`` runs in the foreground. It stays light (no torch): it starts the vLLM server when the
run owns one, starts the trainer (one worker, or ``accelerate launch``) on the training GPUs, passes stop
requests on, stops the server when training ends, and — if the trainer died without writing its end
(killed, out of memory, a crash in native code) — writes the ``error`` and ``run_finished`` events itself.
Machine 0's root also sends the run's alerts to its notify URLs (``notify.py``), and gives the last ones a
bounded time to go out before it exits; it judges a stall of the trainer itself (``stall_watch.py``); and when a
remedy stopped a leg to roll the run back, it starts the next leg from the chosen checkpoint (``remedies.py``).

A run on several machines has one root per machine (``--machine-rank N``, or ``slurm`` for $SLURM_NODEID),
each starting its share of the ranks through ``accelerate launch``. Only machine 0's root keeps the record
(state.json, events.jsonl, the end); another machine's root starts its launcher, passes stop requests on
through the run folder's stop file (on a filesystem every machine shares), ends its launcher if the run
has ended on record but its ranks linger, and exits with its launcher's code. Its launcher's output goes to
``trainer.machine-N.log``, not to machine 0's trainer.log: appends from several hosts to one file on a
network filesystem are not atomic.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path

import trainer_core.contract.run.slurm_job as slurm_job
from trainer_core.alerting import notify
from trainer_core.contract.config.placement import Placement
from trainer_core.contract.config.ports import SERVER_URL_ENV, check_port, free_port
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.disk import fault_from_log, last_complete_checkpoint, release_reserve
from trainer_core.contract.run.event_log import EventWriter, complete_size, last_step
from trainer_core.contract.run.events import Error, ErrorKind
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import collect, process_start_time, run_env, spawn_logged, terminate
from trainer_core.contract.run.status import Status, exit_code
from trainer_core.contract.run.summary import log_tail
from trainer_core.generation import vllm_server
from trainer_core.root.remedies import resume_due
from trainer_core.root.stall_watch import StallWatch

DEFAULT_SERVER_TIMEOUT = 600.0
SLURM_NODE_ENV = "SLURM_NODEID"
LINGER_S = 60.0  # how long another machine's ranks may outlive the run's recorded end before they are ended
POLL_S = 1.0
RECORD_WAIT_S = 120.0  # how long a follower waits, after a stop request, for machine 0 to record the end


def worker_command(
    run_dir: Path,
    num_processes: int = 1,
    accelerate_config: str | None = None,
    port: int | None = None,
    python: str | None = None,
    *,
    num_machines: int = 1,
    machine_rank: int = 0,
    main_process_ip: str | None = None,
) -> list[str]:
    """The trainer's command on this machine. ``num_processes`` is this machine's share; with several machines
    accelerate is given the total (its ``--num_processes``) and where machine 0 listens (``port`` is then
    required: every machine must name the same one)."""
    python = python or sys.executable
    # --echo: a line per logged step into trainer.log, so the log of a detached run shows its progress
    worker = ["-m", "trainer_core", "worker", str(run_dir), "--echo"]
    total = num_processes * num_machines
    if total <= 1 and not accelerate_config:
        return [python, *worker]
    if num_machines > 1 and (not main_process_ip or not port):
        raise ValueError("a run on several machines needs machine 0's address and port")
    cmd = [python, "-m", "accelerate.commands.launch"]
    if accelerate_config:
        cmd += ["--config_file", accelerate_config]
    cmd += ["--num_processes", str(total)]
    if num_machines > 1:
        cmd += [
            "--num_machines",
            str(num_machines),
            "--machine_rank",
            str(machine_rank),
            "--main_process_ip",
            main_process_ip,
        ]
    cmd += ["--main_process_port", str(port or free_port())]
    if total > 1 and not accelerate_config:
        # accelerate's torchrun-based launcher; on a machine without GPUs the ranks join a gloo group
        cmd.append("--multi_gpu")
    return [*cmd, *worker]


def placement_command(run_dir: Path, placement: Placement, accelerate_config: str | None = None) -> list[str]:
    """``worker_command`` for this machine's share of ``placement``."""
    return worker_command(
        run_dir,
        placement.num_processes,
        accelerate_config,
        placement.main_process_port,
        num_machines=placement.num_machines,
        machine_rank=placement.machine_rank,
        main_process_ip=placement.main_process_ip,
    )


def machine_log(folder: RunFolder, machine_rank: int) -> Path:
    """Where a machine's launcher and ranks write: trainer.log on machine 0, trainer.machine-N.log on others."""
    return folder.log_file if machine_rank == 0 else folder.path / f"trainer.machine-{machine_rank}.log"


class RunRoot:
    def __init__(
        self,
        folder: RunFolder,
        placement: Placement,
        accelerate_config: str | None = None,
        server_port: int | None = None,
        server_timeout: float = DEFAULT_SERVER_TIMEOUT,
    ):
        self.folder = folder
        self.placement = placement
        self.accelerate_config = accelerate_config
        self.server_port = server_port
        self.server_timeout = server_timeout
        self.worker: subprocess.Popen | None = None
        self.server: vllm_server.RunningServer | None = None
        self.notifier: notify.Notifier | None = None
        self.signals = 0

    def on_signal(self, signum, frame) -> None:
        self.signals += 1
        if self.signals == 1 and not self.folder.stop_file.exists():  # a stop asked for by a user has its reason
            self.folder.request_stop(slurm_job.signal_reason(self.folder.path, signum))
        if self.worker is None:
            raise KeyboardInterrupt
        # torchrun answers SIGTERM by killing its ranks after a short wait, which could cut a checkpoint
        # in half: several ranks learn of a first request from the stop file, at their next step end.
        # Inside a Slurm job the trainer gets the scheduler's own TERM (scancel --full, a requeue, a
        # preemption) or, for the time limit's warning to this shell only, the stop file: passing this one on
        # too would be its second signal, which means "now" (no checkpoint).
        distributed = self.placement.total_processes > 1 or self.accelerate_config or slurm_job.job_id()
        if self.worker.poll() is None and (self.signals > 1 or not distributed):
            self.worker.send_signal(signal.SIGTERM)

    def run(self) -> int:
        if not self.placement.records_run:
            return self.run_follower()
        pid = os.getpid()
        self.folder.write_state(
            root_pid=pid, root_start_time=process_start_time(pid), placement=self.placement.to_dict()
        )
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        config = RunConfig.load(self.folder.config_file)
        try:
            return self._run_recorded(config, pid)
        finally:
            self._close_notifier()

    def _run_recorded(self, config: RunConfig, pid: int) -> int:
        extra = dict(self.placement.train_env())
        try:
            # first: it hides the notify URLs in config.yaml before anything else reads it, and hears every end
            self.notifier = notify.safe_start(self.folder, config)
            if self.placement.starts_server:
                extra[SERVER_URL_ENV] = self._start_server(config)
            cmd = placement_command(self.folder.path, self.placement, self.accelerate_config)
            self.folder.write_state(command=cmd)
            code = self._run_legs(cmd, config, extra)
        except vllm_server.ServerError as exc:
            self._record_failure(ErrorKind.VLLM_SERVER, str(exc))
            code = 1
        except KeyboardInterrupt:
            self._record_end_now(Status.STOPPED, "stop requested before training started")
            code = 3
        except Exception as exc:  # a bug here must still leave the run failed with its traceback, not lost
            traceback.print_exc()
            self._record_failure(ErrorKind.EXCEPTION, f"the run's root process failed: {type(exc).__name__}: {exc}")
            code = 1
        finally:
            self._stop_server()
        if self.folder.read_state().get("root_pid") != pid:
            return code  # a resume has already started the run again under a new root: its end is not ours
        status = self.folder.status()
        if status is None or not status.is_final:
            if self.signals or self.folder.stop_file.exists():
                self._record_end_now(Status.STOPPED, f"forced: {_describe_exit(code)}")
            else:
                self._record_trainer_exit(code)
        return exit_code(self.folder.status(), code)

    def _run_legs(self, cmd: list[str], config: RunConfig, extra: dict) -> int:
        """The trainer, and again after each rollback a remedy asked for (``remedies.py``); the last leg's code."""
        while True:
            offset = complete_size(self.folder.events_file)
            self.worker = spawn_logged(cmd, self.folder.log_file, run_env(self.folder.path, extra))
            watch = StallWatch(self.folder, config, self.worker, offset).start()
            try:
                code = self._wait_worker(self.worker)
            finally:
                watch.close()
            if resume_due(self.folder, stop_asked=self.signals > 0) is None:
                return code
            config = RunConfig.load(self.folder.config_file)

    def _close_notifier(self) -> None:
        """Send the run's last alerts, for at most ``notify.FLUSH_S`` (a second signal cuts it short); the
        root's exit code stays what the run made it."""
        if self.notifier is None:
            return
        try:
            self.notifier.close(notify.FLUSH_S, abort=lambda: self.signals > 1)
        except (Exception, KeyboardInterrupt) as exc:
            print(f"notify: the last alerts were not sent: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    def run_follower(self) -> int:
        """The root of machine rank > 0: its ranks, stop requests passed on, and nothing written on record
        (no state, no events, no end: machine 0's root records how the run ended)."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        try:
            cmd = placement_command(self.folder.path, self.placement, self.accelerate_config)
            log = machine_log(self.folder, self.placement.machine_rank)
            self.worker = spawn_logged(cmd, log, run_env(self.folder.path, self.placement.train_env()))
            return self._follow_worker(self.worker)
        except KeyboardInterrupt:
            return 3  # stopped before its launcher started: the stop file tells the other machines

    def _follow_worker(self, worker: subprocess.Popen) -> int:
        """Wait for the launcher; if machine 0 records the run's end and this machine's ranks are still there
        ``LINGER_S`` later (stuck in a collective with ranks that are gone), end them. An end already on
        record when this root started (a previous leg's, before a resume restarts the run) does not count."""
        stale = self._recorded_end()
        ended_at = None
        while True:
            try:
                return self._follower_code(worker.wait(timeout=POLL_S), stale)
            except subprocess.TimeoutExpired:
                pass
            except InterruptedError:
                continue
            if ended_at is None:
                end = self._recorded_end()
                if end is not None and end != stale:
                    ended_at = time.monotonic()
            elif time.monotonic() - ended_at > LINGER_S:
                self._end_worker_tree(worker)
                ended_at = float("inf")  # once: the launcher's exit ends the wait

    def _follower_code(self, code: int, stale) -> int:
        """A follower exits as machine 0's root does for the end on record (3 for a graceful stop, which its
        launcher reports as 1); after a stop request it waits up to ``RECORD_WAIT_S`` for that record. With
        no new end on record, its launcher's code."""
        deadline = time.monotonic() + (
            RECORD_WAIT_S if code and (self.signals or self.folder.stop_file.exists()) else 0
        )
        while True:
            state = self.folder.read_state()
            status = Status.parse(state.get("status"))
            if status is not None and status.is_final and state.get("ended") != stale:
                return exit_code(status, code)
            if time.monotonic() >= deadline:
                return code
            time.sleep(POLL_S)

    def _recorded_end(self):
        state = self.folder.read_state()
        status = Status.parse(state.get("status"))
        return state.get("ended") if status is not None and status.is_final else None

    def _end_worker_tree(self, worker: subprocess.Popen, grace: float = 15.0) -> None:
        """TERM to the launcher and its ranks (collected first), then KILL. The launcher is reaped by its
        Popen, not by psutil, so that its exit code is still there for ``wait``."""
        import psutil

        try:
            ranks = psutil.Process(worker.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            ranks = []
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            worker.kill()
        terminate(ranks, grace=5)

    def _wait_worker(self, worker: subprocess.Popen) -> int:
        while True:
            try:
                if self.server is None:
                    return worker.wait()
                return worker.wait(timeout=POLL_S)  # with a server of its own: watch that it lives
            except subprocess.TimeoutExpired:
                if self._server_gone(worker):
                    return worker.wait()
            except InterruptedError:
                continue

    def _start_server(self, config: RunConfig) -> str:
        port = self.server_port or free_port()
        check_port(port)
        cmd = vllm_server.server_command(config, port)
        record = {"command": cmd, "port": port, "gpus": self.placement.server_gpus}
        self.folder.write_state(vllm_server=record)  # the command is on record even if the start fails
        log = self.folder.path / "vllm_server.log"
        env = run_env(self.folder.path, self.placement.server_env())
        # a CPU server (no GPUs of its own): its cache and sockets in the run's places, not in the home
        run_dir = None if self.placement.server_gpus else self.folder.path
        self.server = vllm_server.start(cmd, env, log, port, run_dir)
        self.folder.write_state(vllm_server={**record, "pid": self.server.process.pid})
        vllm_server.wait_healthy(self.server, self.server_timeout)
        return self.server.url

    def _stop_server(self) -> None:
        """The server's whole session (its engine and workers outlive a killed main process), with the run's
        other marked processes, then its orphaned shared memory and socket files."""
        if self.server is None:
            return
        vllm_server.stop(self.server, grace=15, extra=collect(self.folder.path, []))

    def _server_gone(self, worker: subprocess.Popen) -> bool:
        """A server that died while the trainer ran is the run's cause: recorded, and the trainer is stopped."""
        if self.server is None or (gone := vllm_server.died(self.server)) is None:
            return False
        tail = vllm_server.log_tail(self.server.log)
        self._record_failure(ErrorKind.VLLM_SERVER, f"{gone} while the trainer ran; the run stopped.\n{tail}")
        self._end_worker_tree(worker)
        return True

    def _record_trainer_exit(self, code: int) -> None:
        """The trainer died without its end: killed, or (often) it could not write that end on a full disk,
        which its log or the filesystem's free space shows (measured before the reserve is released)."""
        fault = fault_from_log(log_tail(self.folder.log_file), self.folder.path) if code >= 0 else None
        if fault is None:
            self._record_failure(ErrorKind.TRAINER_EXIT, _describe_exit(code))
            return
        release_reserve(self.folder.path)
        checkpoint = last_complete_checkpoint(self.folder.path)
        message = f"{fault.describe(self.folder.path, checkpoint)} ({_describe_exit(code)})"
        self._record_failure(fault.kind, message, fault.evidence(self.folder.path, checkpoint))

    def _record_failure(self, kind: ErrorKind | str, message: str, extra: dict | None = None) -> None:
        release_reserve(self.folder.path)  # the trainer is gone: its room is ours to write the end with
        step = last_step(self.folder.events_file)
        with EventWriter(self.folder.events_file) as writer:
            writer.emit(Error(kind=kind, message=message, step=step, extra=extra or {}))
            self.folder.record_end(Status.FAILED, message.splitlines()[0], step, emit=writer.emit)

    def _record_end_now(self, status: Status, reason: str) -> None:
        self.folder.record_end(status, reason, last_step(self.folder.events_file))


def _describe_exit(code: int) -> str:
    if code < 0:
        name = signal.Signals(-code).name
        hint = " (the kernel's out-of-memory killer sends SIGKILL)" if -code == signal.SIGKILL else ""
        return f"the trainer was killed by {name}{hint} before it could record its end"
    return f"the trainer exited with code {code} before it could record its end; see trainer.log"


def machine_rank_of(text: str, env: Mapping[str, str] | None = None) -> int:
    """``--machine-rank``: a number, or ``slurm`` for the node's index in its job ($SLURM_NODEID)."""
    env = os.environ if env is None else env
    if text == "slurm":
        text = env.get(SLURM_NODE_ENV, "")
        if not text.strip():
            raise ConfigError(
                "machine_rank",
                f"--machine-rank slurm needs ${SLURM_NODE_ENV}, which is not set: "
                "start the root with srun inside the job, or pass the rank as a number.",
            )
    try:
        return int(text)
    except ValueError:
        raise ConfigError("machine_rank", f"--machine-rank must be a number or slurm, got {text!r}.") from None


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m trainer_core run")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument(
        "--placement",
        default="{}",
        help="JSON: train_gpus, server_gpus, num_processes (per machine); for several machines also "
        "num_machines, main_process_ip, main_process_port (machine 0's address and a free port)",
    )
    parser.add_argument(
        "--machine-rank",
        default=None,
        metavar="N|slurm",
        help=f"this machine's rank in a run on several machines (overrides the placement's); slurm: ${SLURM_NODE_ENV}",
    )
    parser.add_argument("--accelerate-config", default=None)
    parser.add_argument("--vllm-port", type=int, default=None)
    parser.add_argument("--vllm-timeout", type=float, default=DEFAULT_SERVER_TIMEOUT)
    args = parser.parse_args(argv)
    try:
        placement = Placement.from_dict(json.loads(args.placement))
        if args.machine_rank is not None:
            placement = placement.for_machine(machine_rank_of(args.machine_rank))
    except (ValueError, ConfigError) as exc:  # json.JSONDecodeError is a ValueError
        parser.error(f"--placement / --machine-rank: {exc}")
    root = RunRoot(RunFolder(args.run_dir), placement, args.accelerate_config, args.vllm_port, args.vllm_timeout)
    return root.run()
