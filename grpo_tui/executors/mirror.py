"""A local copy of a remote run folder, kept current by one stream from the host: how a remote run is watched.

Everything that shows a run (the monitor, ``watch``, the charts) reads a run folder. For a run on another
machine this keeps one in the cache (``$XDG_CACHE_HOME/grpo-tui/hosts/HOST/RUN_ID``, private) fed by the
host's ``grpo-tui events --mirror --follow`` (``services/serving/event_feed.py``), so every viewer works on a remote
run unchanged and nothing of the reading is implemented twice. The appended files are copied at the host's
offsets (a bad line masked with as many bytes), so after a dropped connection the copy asks again from where
it ends: no event is lost and none is repeated. What only the host can judge (is the process alive, watcher alerts, its GPUs)
arrives as status messages and is kept in ``.remote.json``, which ``services/catalog/status`` reads in place of
a process check.

The host is not trusted: every line is parsed by ``grpo_tui.services.records.wire`` before anything is
written, every local path is checked to stay inside the host's cache folder, and an append may start only
where the copy ends (or, for a tail-only file's first bytes of a stream, further on: the copy then starts again
there, so no offset makes a sparse file). Of events.jsonl and samples.jsonl only complete lines are written,
and a line that is not one JSON object is masked (``wire.checked_lines``): the readers skip and count it, as
they would on the host. A stream line that breaks the format ends the copy of that run with one error naming
the host; the other runs and hosts go on.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from orjson import dumps

from grpo_tui.services.catalog.status import REMOTE_FILE
from grpo_tui.services.machine.gpus import GPU
from grpo_tui.services.records.wire import (
    APPENDED,
    MAX_LINE,
    Append,
    End,
    GpuReport,
    Reset,
    RunHeader,
    StatusReport,
    WholeFile,
    WireError,
    checked_lines,
    parse_mirror_line,
    parse_mirror_message,
    parse_run_id,
)
from grpo_tui.services.serving.event_feed import LINES_ONLY, TAIL_LIMITS
from trainer_core.contract.config.user_files import user_cache_dir
from trainer_core.contract.run.backoff import Backoff
from trainer_core.contract.run.event_log import MAX_LINE_BYTES
from trainer_core.contract.run.folder import FORMAT_VERSION, RunFolder, write_bytes_atomic
from trainer_core.contract.run.summary import warning_record

from .hosts import HostError
from .ssh_connection import Connection, check_remote

BACKOFF_START, BACKOFF_MAX = 0.5, 30.0


def cache_root() -> Path:
    return user_cache_dir() / "hosts"


def host_cache(host: str) -> Path:
    """``cache_root()/host``; HostError if that would not be one folder right inside the cache root."""
    root = cache_root()
    if (root / host).resolve().parent != root.resolve():
        raise HostError(f"host {host}: its name cannot be a folder of the mirror cache {root}")
    return root / host


def mirror_path(host: str, run_id: str) -> Path:
    """Where the copy of ``run_id`` of ``host`` lives: checked to be a folder right inside ``host_cache(host)``."""
    try:
        parse_run_id(run_id)
    except WireError as exc:
        raise HostError(f"host {host}: {exc}") from None
    base = host_cache(host)
    if (base / run_id).resolve().parent != base.resolve():
        raise HostError(f"host {host}: run {run_id}: its copy would not stay inside {base}")
    return base / run_id


def _private(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


class Mirror:
    """Keeps ``folder`` (the local copy) in step with the run at ``remote_path`` on the connection's host: the
    ``RunCopy`` (``base.py``) of a remote run.

    ``start()`` runs the stream in a thread that reconnects with backoff until the run has ended (or
    ``stop()``); ``sync()`` copies once, in the calling thread. ``ready`` is set once config and state
    have arrived; ``reconnects`` counts the streams that were started again after a drop. ``rejected`` is
    set when the host sent something that breaks the format: the copy stops there, ``error`` says why.
    """

    def __init__(self, conn: Connection, run_id: str, remote_path: str):
        self.conn, self.run_id, self.remote_path = conn, run_id, remote_path
        self.host = conn.host.name
        self.folder = RunFolder(_private(mirror_path(self.host, run_id)))
        os.chmod(self.folder.path.parent, 0o700)
        self._inside = self.folder.path.resolve()
        self.ready = threading.Event()
        self.ended = threading.Event()
        self.rejected = threading.Event()
        self.reconnects = 0
        self.error: str | None = None
        self._stop = threading.Event()
        self._proc = None
        self._thread: threading.Thread | None = None
        self._started: set[str] = set()  # appended files that had bytes in this stream
        self._base: dict[str, int] = {}  # the host offset of a tail-only file's first byte in the copy
        self._held: dict[str, bytes] = {}  # the start of a line not yet complete, per lines-only file
        self.masked = 0  # lines the host sent that were no JSON object, masked in the copy
        self.masked_where: str | None = None
        self._gpus: tuple[GPU, ...] = ()  # the host's, as its stream last reported them
        for name in TAIL_LIMITS:  # where an earlier copy's tail started is not known: sent again from the host
            with contextlib.suppress(OSError, WireError):
                os.close(os.open(self._path(name), os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW))
        self._remote: dict = {
            "host": self.host,
            "remote_path": remote_path,
            "status": None,
            "alerts": [],
            "gpus": [],
            "connected": False,
        }
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

    def gpus(self) -> list[GPU]:
        """The host's GPUs, as its stream last reported them."""
        return list(self._gpus)

    def sync(self) -> None:
        """Copy what the host has now, once (no follow)."""
        self._stream(follow=False)
        if self.error:
            raise HostError(self.error)

    def _loop(self) -> None:
        backoff = Backoff(BACKOFF_START, cap=BACKOFF_MAX)
        first = True
        while not self._stop.is_set() and not self.ended.is_set() and not self.rejected.is_set():
            if not first:
                self.reconnects += 1
            first = False
            got = self._stream(follow=True)
            if self.ended.is_set() or self._stop.is_set() or self.rejected.is_set():
                break
            if got:
                backoff.reset()
            self._set_remote(connected=False, error=self.error or "the connection dropped; reconnecting")
            self._stop.wait(backoff.next())

    # -- one stream -------------------------------------------------------------------------------------

    def _offsets(self) -> list[str]:
        sizes = {name: self._base.get(name, 0) + self._size(name) for name in APPENDED}
        return [
            "--from",
            str(sizes["events.jsonl"]),
            "--from-samples",
            str(sizes["samples.jsonl"]),
            "--from-log",
            str(sizes["trainer.log"]),
        ]

    def _size(self, name: str) -> int:
        try:
            return os.stat(self.folder.path / name).st_size
        except OSError:
            return 0

    def _stream(self, follow: bool) -> bool:
        """One ``events --mirror`` stream, applied as it comes; True when it delivered anything."""
        got = False
        args = ["events", self.remote_path, "--mirror", *self._offsets(), *(["--follow"] if follow else [])]
        self._started, self._held = set(), {}  # a new stream sends an unfinished line again from its start
        try:
            with tempfile.TemporaryFile() as err:
                self._proc = proc = self.conn.popen(args, stdout=subprocess.PIPE, stderr=err)
                out = proc.stdout
                assert out is not None  # stdout=PIPE
                try:
                    while line := out.readline(MAX_LINE + 1):
                        if not line.endswith(b"\n"):
                            if len(line) > MAX_LINE:
                                raise WireError(f"a line longer than {MAX_LINE} bytes")
                            break  # cut off mid-line by a drop: asked for again from the copy's sizes
                        self._apply(line)
                        got = True
                        self.error = None
                except WireError as exc:
                    self._kill(proc)
                    self._reject(exc)
                    return got
                except OSError as exc:  # the copy cannot be written here (a full disk): retried with backoff
                    self._kill(proc)
                    self.error = (
                        f"host {self.host}: run {self.run_id}: cannot write its copy in {self.folder.path}: "
                        f"{exc.strerror or exc}"
                    )
                    return got
                out.close()
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
        finally:
            self._proc = None
        return got

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def _reject(self, exc: WireError) -> None:
        """The host broke the format: the copy of this run stops, with one error that names the host."""
        self.error = (
            f"host {self.host}: run {self.run_id}: its events stream sent a bad line ({exc}); "
            "the copy is not updated any more"
        )
        self.rejected.set()
        self._set_remote(connected=False, error=self.error)

    def _apply(self, message: bytes | dict) -> None:
        """Parse one stream line (or its decoded JSON) and apply it; WireError if it breaks the format."""
        parsed = parse_mirror_line(message) if isinstance(message, bytes) else parse_mirror_message(message)
        if isinstance(parsed, Append):
            self._append(parsed)
        elif isinstance(parsed, WholeFile):
            write_bytes_atomic(self._path(parsed.file), parsed.data, fsync=False)
            if self._path("config.yaml").exists() and self._path("state.json").exists():
                self.ready.set()
        elif isinstance(parsed, StatusReport):
            self._set_remote(
                status=parsed.status.value,
                alerts=[warning_record(a) for a in parsed.alerts],
                connected=True,
                error=None,
            )
        elif isinstance(parsed, GpuReport):
            self._gpus = parsed.gpus
            self._set_remote(gpus=parsed.to_wire()["gpus"])
        elif isinstance(parsed, Reset):
            os.close(os.open(self._path(parsed.file), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600))
            self._started.discard(parsed.file)
            self._base.pop(parsed.file, None)
            self._held.pop(parsed.file, None)
        elif isinstance(parsed, End):
            self._set_remote(status=parsed.status.value, connected=True, error=None)
            self.ready.set()
            if not parsed.status.is_live:
                self.ended.set()
        elif isinstance(parsed, RunHeader):
            if parsed.run_id != self.run_id:
                raise WireError(
                    f"run.run_id: expected {self.run_id!r}, the run that was asked for, got {parsed.run_id!r}"
                )
            if parsed.format_version != FORMAT_VERSION:
                raise WireError(f"run.format_version: expected {FORMAT_VERSION}, got {parsed.format_version!r}")

    def _path(self, name: str) -> Path:
        """``name`` in the copy, checked to resolve inside it (a link planted there does not lead out)."""
        path = self.folder.path / name
        if path.resolve().parent != self._inside:
            raise WireError(f"{name}: {path} leads out of the copy's folder {self._inside}")
        return path

    def _append(self, message: Append) -> None:
        """Bytes at the host's offset: no further than the copy's end, except where a tail-only file's first
        bytes of a stream skip its start: then the copy starts again there (its byte 0 is that host offset,
        ``_base``), never with a hole. Of events.jsonl and samples.jsonl only complete lines are written, each
        checked (``checked_lines``); the start of an unfinished one waits in memory for its end."""
        name = message.file
        path = self._path(name)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            base, size = self._base.get(name, 0), os.fstat(fd).st_size
            offset, data = message.offset, message.data
            held = self._held.pop(name, b"")
            if held and offset == base + size + len(held):  # the rest of a line begun in an earlier message
                offset, data = base + size, held + data
            if offset > base + size:
                if name not in TAIL_LIMITS or name in self._started:
                    raise WireError(
                        f"offset: expected at most {base + size}, the end of the copy's {name}, got {offset}"
                    )
                os.ftruncate(fd, 0)
                base = self._base[name] = offset
            elif offset < base:
                raise WireError(f"offset: expected at least {base}, where the copy's {name} starts, got {offset}")
            if name in LINES_ONLY:
                cut = data.rfind(b"\n") + 1
                if len(data) - cut > MAX_LINE_BYTES:
                    raise WireError(f"{name}: a line longer than {MAX_LINE_BYTES} bytes")
                if cut < len(data):
                    self._held[name] = data[cut:]
                data = self._checked(name, data[:cut], offset)
            if data:
                os.pwrite(fd, data, offset - base)
            self._started.add(name)
        finally:
            os.close(fd)

    def _checked(self, name: str, data: bytes, offset: int) -> bytes:
        """``data`` (complete lines) with each line that is not one JSON object masked (``checked_lines``),
        counted in ``masked`` and the first named in ``masked_where``."""
        checked, bad = checked_lines(data)
        if bad:
            self.masked += len(bad)
            if self.masked_where is None:
                self.masked_where = f"{name} at the host's byte {offset + bad[0][0]}: {bad[0][1]}"
            self._set_remote(masked_lines=self.masked, masked_where=self.masked_where)
        return checked

    def _set_remote(self, **changes) -> None:
        self._remote.update(changes, updated=time.time())
        self._write_remote()

    def _write_remote(self) -> None:
        write_bytes_atomic(self.folder.path / REMOTE_FILE, dumps(self._remote), fsync=False)
