"""Run folder layout, atomic state, and process identity.

The run folder is the only interface between a trainer and everything that watches it (see
docs/run-format.md). This module owns its paths, creates it private to the user, replaces ``state.json``,
``config.yaml`` and ``stop_request`` atomically so a reader (or a resume after a crash or a full disk) never
sees half a file, serialises the read-merge-replace of ``state.json`` with a lock of the folder (the root,
the trainer and ``grpo-tui stop`` all write it: without one, two merges at once lose one's fields), and
records the trainer's pid together with its start time,
because a pid alone can be reused by an unrelated process after the trainer dies.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from trainer_core.contract.run import signal_safe
from trainer_core.contract.run.atomic_files import write_bytes_atomic, write_json_atomic
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import RunFinished
from trainer_core.contract.run.process import process_start_time
from trainer_core.contract.run.state import RunState, read_state, read_stop_reason
from trainer_core.contract.run.status import IllegalTransition, Status
from trainer_core.contract.run.summary import end_summary

FORMAT_VERSION = 3  # 3: rewound events and a leg's revision and changes (docs/run-format.md)
RUNS_DIR_ENV = "GRPO_TUI_RUNS_DIR"


def resolve_runs_dir(runs_dir: str | os.PathLike | None = None) -> Path:
    """--runs-dir, else $GRPO_TUI_RUNS_DIR, else ./runs."""
    if runs_dir:
        return Path(runs_dir)
    env = os.environ.get(RUNS_DIR_ENV)
    return Path(env) if env else Path("runs")


def new_run_id(now: float | None = None) -> str:
    """Sortable by start time (UTC, to the millisecond), unique thanks to a random suffix."""
    now = time.time() if now is None else now
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    return f"{stamp}-{int(now * 1000) % 1000:03d}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class RunFolder:
    path: Path

    @property
    def run_id(self) -> str:
        return self.path.name

    config_file = property(lambda self: self.path / "config.yaml")
    state_file = property(lambda self: self.path / "state.json")
    events_file = property(lambda self: self.path / "events.jsonl")
    samples_file = property(lambda self: self.path / "samples.jsonl")
    log_file = property(lambda self: self.path / "trainer.log")
    checkpoints_dir = property(lambda self: self.path / "checkpoints")
    stop_file = property(lambda self: self.path / "stop_request")

    @classmethod
    def create(cls, runs_dir: str | os.PathLike | None = None, run_id: str | None = None) -> RunFolder:
        base = resolve_runs_dir(runs_dir)
        try:
            base.mkdir(parents=True, exist_ok=True)
            if not os.access(base, os.W_OK | os.X_OK):
                raise PermissionError(13, "Permission denied")
            path = base / (run_id or new_run_id())
            path.mkdir(mode=0o700)
        except OSError as exc:
            raise OSError(
                exc.errno,
                f"cannot create a run folder in {base}: {exc.strerror}. Pass --runs-dir with a writable folder "
                f"or set ${RUNS_DIR_ENV}.",
            ) from None
        os.chmod(path, 0o700)
        return cls(path)

    def save_config(self, config) -> None:
        """Write the resolved RunConfig as config.yaml, private to the user (mkstemp's 0600), atomically: a
        failed write leaves the previous config.yaml as it was. Notify URLs are secrets: the real ones go to
        notify.json and config.yaml holds them masked (docs/alerts.md)."""
        import yaml

        config = config.for_run_folder(self.path)
        # as RunConfig.save writes a .yaml file, but through a temporary file replaced in one step
        text = yaml.safe_dump(config.to_dict(), sort_keys=False)
        write_bytes_atomic(self.config_file, text.encode())

    def read_config(self) -> dict:
        """config.yaml as a mapping; {} when it is missing, unreadable or not YAML (the run still lists)."""
        try:
            import yaml

            # libyaml's loader when PyYAML has it: ~10x faster, and a runs list may read thousands
            data = yaml.load(self.config_file.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except Exception:
            return {}
        return data if isinstance(data, dict) else {}

    def read_state(self) -> RunState:
        """state.json's fields with their types ({} when missing or unusable; ``problems`` says why): run/state.py."""
        return read_state(self.state_file)

    def status(self) -> Status | None:
        """The status state.json records (not what a viewer shows: see ``lost``)."""
        return self.read_state().status

    def write_state(self, **changes) -> dict:
        """Merge ``changes`` into state.json; a status change must be a legal transition (run/status.py). The
        merge holds the folder's lock, so a merge by another process at the same moment is not lost."""
        with self._locked():
            return self._merge_state(changes)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive ``flock`` of the run folder itself (no lock file to leave behind), for one merge of
        state.json; where the filesystem refuses it (NFS may), the merge goes on unlocked."""
        with signal_safe.section():  # a stop signal's handler writes here too: it waits (run/signal_safe.py)
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                yield
                return
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except OSError:
                    pass
                yield
            finally:
                os.close(fd)  # closing the last descriptor releases the lock

    def _merge_state(self, changes: dict) -> dict:
        state = dict(self.read_state())
        if "status" in changes:
            new, old = Status(changes["status"]), Status.parse(state.get("status"))
            if old is not None and not old.can_become(new):
                raise IllegalTransition(old, new)
            changes["status"] = new.value
        state.update(changes)
        state.setdefault("format_version", FORMAT_VERSION)
        state["updated"] = round(time.time(), 3)
        write_json_atomic(self.state_file, state)
        return state

    def initial_state(self, pid: int | None = None) -> dict:
        pid = pid or os.getpid()
        return self.write_state(
            format_version=FORMAT_VERSION,
            run_id=self.run_id,
            status=Status.STARTING,
            pid=pid,
            pid_start_time=process_start_time(pid),
            host=socket.gethostname(),
            started=round(time.time(), 3),
            ended=None,
            exit_reason=None,
        )

    def record_end(self, status: Status, reason: str | None, step: int, emit=None) -> None:
        """The run's last words: a ``run_finished`` event, then the final state. ``emit`` is the caller's open
        event writer's ``emit``; without one, the events file is opened for this one line."""
        status = Status(status)
        event = RunFinished(status=status, reason=reason, step=step)
        if emit is None:
            with EventWriter(self.events_file) as writer:
                writer.emit(event)
        else:
            emit(event)
        ended = round(time.time(), 3)
        summary = end_summary(self, status, ended)  # what the runs list shows (run/summary.py); None if it fails
        self.write_state(status=status, exit_reason=reason, ended=ended, last_step=step, summary=summary)

    def request_stop(self, reason: str = "user request") -> None:
        """Ask the trainer to stop gracefully at the end of the current step (the file replaced in one step: the
        trainer, checking it at a step's end, reads the old request or the new one, never half of one)."""
        data = json.dumps({"reason": reason, "time": round(time.time(), 3)}) + "\n"
        write_bytes_atomic(self.stop_file, data.encode(), fsync=False)

    def stop_reason(self) -> str | None:
        """The reason the stop request gives; None without one (no request, or one that names no reason)."""
        return read_stop_reason(self.stop_file)

    def checkpoints(self) -> list[Path]:
        if not self.checkpoints_dir.exists():
            return []
        found = [p for p in self.checkpoints_dir.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
        return sorted(found, key=lambda p: int(p.name.split("-")[-1]))
