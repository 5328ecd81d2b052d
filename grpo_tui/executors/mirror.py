"""A local copy of a remote run folder, kept current by one stream from the host: how a remote run is watched.

Everything that shows a run (the monitor, ``watch``, the charts) reads a run folder. For a run on another
machine this keeps one in the cache (``$XDG_CACHE_HOME/grpo-tui/hosts/HOST/RUN_ID``, private) fed by the
host's ``grpo-tui events --mirror --follow`` (``services/run_export.py``), so every viewer works on a remote
run unchanged and nothing of the reading is implemented twice. The appended files are copied byte for
byte at the host's offsets, so after a dropped connection the copy asks again from its own sizes: no event
is lost and none is repeated. What only the host can judge (is the process alive, watcher alerts, its GPUs)
arrives as status messages and is kept in ``.remote.json``, which ``services/run_status`` reads in place of
a process check.
"""

from __future__ import annotations

import base64
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from orjson import dumps, loads

from trainer_core.contract.run_folder import RunFolder, write_bytes_atomic

from ..services.run_export import APPENDED, WHOLE
from ..services.run_status import REMOTE_FILE
from .hosts import HostError
from .ssh_connection import Connection, check_remote

BACKOFF_START, BACKOFF_MAX = 0.5, 30.0


def cache_root() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "grpo-tui" / "hosts"


def mirror_path(host: str, run_id: str) -> Path:
    return cache_root() / host / run_id


def _private(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


class Mirror:
    """Keeps ``folder`` (the local copy) in step with the run at ``remote_path`` on the connection's host.

    ``start()`` runs the stream in a thread that reconnects with backoff until the run has ended (or
    ``stop()``); ``sync()`` copies once, in the calling thread. ``ready`` is set once config and state
    have arrived; ``reconnects`` counts the streams that were started again after a drop.
    """

    def __init__(self, conn: Connection, run_id: str, remote_path: str):
        self.conn, self.run_id, self.remote_path = conn, run_id, remote_path
        self.host = conn.host.name
        self.folder = RunFolder(_private(mirror_path(self.host, run_id)))
        os.chmod(self.folder.path.parent, 0o700)
        self.ready = threading.Event()
        self.ended = threading.Event()
        self.reconnects = 0
        self.error: str | None = None
        self._stop = threading.Event()
        self._proc = None
        self._thread: threading.Thread | None = None
        self._remote: dict = {"host": self.host, "remote_path": remote_path, "status": None, "alerts": [],
                              "gpus": [], "connected": False}
        self._write_remote()

    # -- lifecycle --------------------------------------------------------------------------------------

    def start(self) -> Mirror:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"mirror {self.host}:{self.run_id}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def wait_ready(self, timeout: float) -> bool:
        """True once config and state are here; raises HostError if the stream failed before that."""
        deadline = time.monotonic() + timeout
        while not self.ready.wait(0.1):
            if self.error:  # nothing arrived yet and the stream failed: say why now, not at the timeout
                raise HostError(self.error)
            if time.monotonic() > deadline:
                return False
        return True

    def sync(self) -> None:
        """Copy what the host has now, once (no follow)."""
        self._stream(follow=False)
        if self.error:
            raise HostError(self.error)

    def _loop(self) -> None:
        backoff = BACKOFF_START
        first = True
        while not self._stop.is_set() and not self.ended.is_set():
            if not first:
                self.reconnects += 1
            first = False
            got = self._stream(follow=True)
            if self.ended.is_set() or self._stop.is_set():
                break
            backoff = BACKOFF_START if got else min(backoff * 2, BACKOFF_MAX)
            self._set_remote(connected=False, error=self.error or "the connection dropped; reconnecting")
            self._stop.wait(backoff)

    # -- one stream -------------------------------------------------------------------------------------

    def _offsets(self) -> list[str]:
        sizes = {}
        for name in APPENDED:
            try:
                sizes[name] = os.stat(self.folder.path / name).st_size
            except OSError:
                sizes[name] = 0
        return ["--from", str(sizes["events.jsonl"]), "--from-samples", str(sizes["samples.jsonl"]),
                "--from-log", str(sizes["trainer.log"])]

    def _stream(self, follow: bool) -> bool:
        """One ``events --mirror`` stream, applied as it comes; True when it delivered anything."""
        got = False
        args = ["events", self.remote_path, "--mirror", *self._offsets(), *(["--follow"] if follow else [])]
        try:
            with tempfile.TemporaryFile() as err:
                self._proc = proc = self.conn.popen(args, stdout=subprocess.PIPE, stderr=err)
                for line in proc.stdout:
                    if not line.endswith(b"\n"):
                        break  # cut off mid-line by a drop: asked for again from the copy's sizes
                    self._apply(loads(line))
                    got = True
                    self.error = None
                proc.stdout.close()
                code = proc.wait()
                err.seek(0)
                stderr = err.read().decode(errors="replace")
            if self._stop.is_set() or self.ended.is_set():
                return got
            check_remote(self.conn, code, stderr)
            if code != 0:
                said = [line for line in stderr.splitlines() if line.strip()]
                self.error = f"host {self.host}: {said[-1] if said else f'the stream exited with {code}'}"
        except HostError as exc:
            self.error = str(exc)
        except ValueError as exc:  # a line that is not JSON: not a grpo-tui stream
            self.error = f"host {self.host}: the events stream sent something that is not JSON ({exc})"
        finally:
            self._proc = None
        return got

    def _apply(self, message: dict) -> None:
        path = self.folder.path
        if "append" in message:
            name = message["append"]
            if name in APPENDED:
                self._append(path / name, int(message["offset"]), base64.b64decode(message["data"]))
        elif "file" in message:
            if message["file"] in WHOLE:
                write_bytes_atomic(path / message["file"], base64.b64decode(message["data"]), fsync=False)
                if (path / "config.yaml").exists() and (path / "state.json").exists():
                    self.ready.set()
        elif "status" in message:
            self._set_remote(status=message["status"], alerts=message.get("alerts") or [], connected=True, error=None)
        elif "gpus" in message:
            self._set_remote(gpus=message["gpus"])
        elif "reset" in message and message["reset"] in APPENDED:
            with open(path / message["reset"], "wb"):
                pass
        elif "end" in message:
            self._set_remote(status=message["end"], connected=True, error=None)
            self.ready.set()
            if message["end"] not in ("starting", "running", "stopping"):
                self.ended.set()

    @staticmethod
    def _append(path: Path, offset: int, data: bytes) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size != offset:
                os.ftruncate(fd, offset)  # longer: a tail-only copy starts with a hole
            os.pwrite(fd, data, offset)
        finally:
            os.close(fd)

    def _set_remote(self, **changes) -> None:
        self._remote.update(changes, updated=time.time())
        self._write_remote()

    def _write_remote(self) -> None:
        write_bytes_atomic(self.folder.path / REMOTE_FILE, dumps(self._remote), fsync=False)

