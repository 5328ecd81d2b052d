"""Disk space as a fault of its own: how full the run's filesystem is, and why a write failed.

A full disk used to end a run with torch's ``RuntimeError: unexpected pos 136320 vs 136208``, an empty
trainer.log (no room for the traceback) and a state that still said ``running``. This module names the
cause instead: it recognises the errno of a failed write (``ENOSPC``, ``EDQUOT``, ``EROFS``, ``EIO``) in an
exception or anything it wraps, and when the message does not say (torch's), it looks at the free space of
the run folder's filesystem at that moment. It also keeps the run's **reserve**: a small file
(``RUN_DIR/.reserve``) written when the trainer starts and deleted when the run ends, or the moment a write
fails, so the error, ``run_finished``, state.json and the traceback in trainer.log still fit on a full disk.
Stdlib only: the trainer, its root process and every viewer use it.
"""

from __future__ import annotations

import errno as _errno
import os
import re
from dataclasses import dataclass
from pathlib import Path

from trainer_core.contract.run.checkpoints import check_checkpoints, newest

RESERVE_NAME = ".reserve"
RESERVE_BYTES = 256 * 1024

# errno -> the error kind a run records (docs/run-format.md); ENOSPC is by far the common one
DISK_ERRNOS = {
    _errno.ENOSPC: "disk_full",
    _errno.EDQUOT: "quota_exceeded",
    _errno.EROFS: "read_only_filesystem",
    _errno.EIO: "io_error",
}
DISK_KINDS = frozenset(DISK_ERRNOS.values())
FULL_KINDS = frozenset({"disk_full", "quota_exceeded"})  # kinds that freeing space (or a larger disk) fixes

_TEXT_PATTERNS = [  # what a wrapped error says when its OSError is gone (safetensors, tokenizers, logs)
    ("disk_full", re.compile(r"No space left on device|\[Errno 28\]|StorageFull|\bENOSPC\b")),
    ("quota_exceeded", re.compile(r"Disk quota exceeded|\[Errno 122\]|\bEDQUOT\b")),
    ("read_only_filesystem", re.compile(r"Read-only file system|\[Errno 30\]|\bEROFS\b")),
    ("io_error", re.compile(r"Input/output error|\[Errno 5\]|\bEIO\b")),
]
_KIND_ERRNO = {kind: _errno.errorcode[number] for number, kind in DISK_ERRNOS.items()}
_PATH_LOCALS = ("f", "file", "filename", "path", "tmp", "save_directory", "output_dir", "output_path")


@dataclass(frozen=True)
class Usage:
    """One filesystem's space as ``df`` reports it, for the folder asked about."""

    path: str
    mount: str
    total: int
    used: int
    free: int  # bytes this process may still write

    @property
    def percent_used(self) -> float:
        """Used share of what is usable (df's Use%): the root-reserved blocks do not count as free."""
        usable = self.used + self.free
        return 100.0 * self.used / usable if usable else 100.0

    @property
    def nearly_full(self) -> bool:
        """So little is free that the last failed write surely ran out of space."""
        return self.free < min(1024 * 1024, self.total // 100)

    def describe(self) -> str:
        return f"{human(self.free)} free of {human(self.total)} ({self.percent_used:.0f} % used)"


def human(size: int | float | None) -> str:
    if size is None:
        return "?"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover


def existing_parent(path: str | os.PathLike) -> Path:
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def mount_point(path: str | os.PathLike) -> str:
    p = existing_parent(path)
    while not os.path.ismount(p) and p != p.parent:
        p = p.parent
    return str(p)


def usage(path: str | os.PathLike) -> Usage | None:
    """Space on the filesystem holding ``path`` (or its nearest existing parent); None if it cannot be read."""
    where = existing_parent(path)
    try:
        st = os.statvfs(where)
    except OSError:
        return None
    free_blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail  # root may write into reserved blocks
    return Usage(
        path=str(where),
        mount=mount_point(where),
        total=st.f_blocks * st.f_frsize,
        used=(st.f_blocks - st.f_bfree) * st.f_frsize,
        free=free_blocks * st.f_frsize,
    )


def filesystem_type(mount: str) -> str | None:
    """The type of the filesystem mounted at ``mount`` (tmpfs, ext4, nfs, …), from /proc where it exists."""
    found = None
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) > 2 and parts[1].replace("\\040", " ") == mount:
                    found = parts[2]  # the last mount on a point is the visible one
    except OSError:
        return None
    return found


# -- why a write failed ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiskFault:
    """A write that failed for lack of space (or a disk that refused it): what, where, and how full."""

    kind: str  # disk_full, quota_exceeded, read_only_filesystem, io_error
    errno_name: str  # ENOSPC, EDQUOT, EROFS, EIO
    path: str | None  # the file being written, when known
    usage: Usage | None  # measured when the fault was recognised, before the reserve was released
    inferred: bool = False  # the error did not say; the filesystem was (nearly) full

    def describe(self, run_dir: str | os.PathLike, last_checkpoint: str | None) -> str:
        """One line for exit_reason: the cause, the filesystem, the path, the free space, the checkpoint."""
        what = {
            "disk_full": "no space left on the filesystem",
            "quota_exceeded": "disk quota exceeded on the filesystem",
            "read_only_filesystem": "the filesystem is read-only",
            "io_error": "I/O error on the filesystem",
        }[self.kind]
        where = ""
        if self.usage is not None:
            fstype = filesystem_type(self.usage.mount)
            where = f" {self.usage.mount}" + (f" ({fstype})" if fstype else "")
        path = _relative(self.path, run_dir) if self.path else "the run folder"
        free = f"; {self.usage.describe()}" if self.usage is not None else ""
        saved = f"last complete checkpoint: {last_checkpoint}" if last_checkpoint else "no complete checkpoint"
        return f"{self.kind} ({self.errno_name}): {what}{where} holding the run folder: writing {path} failed{free}; {saved}"

    def evidence(self, run_dir: str | os.PathLike, last_checkpoint: str | None) -> dict:
        """Structured fields for the ``error`` event (docs/run-format.md)."""
        u = self.usage
        return {
            "errno": self.errno_name,
            "path": _relative(self.path, run_dir) if self.path else None,
            "filesystem": u.mount if u else None,
            "free_bytes": u.free if u else None,
            "total_bytes": u.total if u else None,
            "last_checkpoint": last_checkpoint,
            "inferred": self.inferred,
        }


def _relative(path: str, run_dir) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(run_dir).resolve()))
    except (ValueError, OSError):
        return str(path)


def _chain(exc: BaseException) -> list[BaseException]:
    seen, out, todo = set(), [], [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        out.append(e)
        todo += [e.__cause__, e.__context__]
    return out


def kind_from_text(text: str) -> str | None:
    for kind, pattern in _TEXT_PATTERNS:
        if pattern.search(text):
            return kind
    return None


def _path_in_traceback(exc: BaseException, run_dir: Path) -> str | None:
    """The innermost frame's local that names a file inside the run folder (torch.save's ``f``, …)."""
    root = str(run_dir.resolve())
    for e in _chain(exc):
        frames, tb = [], e.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        for frame in reversed(frames):
            for name in _PATH_LOCALS:
                value = frame.f_locals.get(name)
                if isinstance(value, (str, os.PathLike)):
                    try:
                        candidate = os.path.abspath(os.fspath(value))
                    except (TypeError, ValueError):
                        continue
                    if candidate.startswith(root + os.sep):
                        return candidate
    return None


def disk_fault(exc: BaseException, run_dir: str | os.PathLike) -> DiskFault | None:
    """The disk fault behind ``exc`` (or anything chained to it), or None when it is not one.

    An ``OSError`` with a disk errno says so; so does a wrapped error's text (``No space left on device``);
    otherwise (torch's ``unexpected pos`` after a short write) a run folder whose filesystem is nearly full
    at this moment means the disk filled. Call it before releasing the reserve, which would hide that.
    """
    run_dir = Path(run_dir)
    measured = usage(run_dir)
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in DISK_ERRNOS:
            path = e.filename if isinstance(e.filename, str) else None
            return DiskFault(
                DISK_ERRNOS[e.errno], _errno.errorcode[e.errno], path or _path_in_traceback(exc, run_dir), measured
            )
    kind = kind_from_text("\n".join(str(e) for e in _chain(exc)))
    inferred = kind is None
    if kind is None:
        if measured is None or not measured.nearly_full:
            return None
        kind = "disk_full"
    return DiskFault(kind, _KIND_ERRNO[kind], _path_in_traceback(exc, run_dir), measured, inferred)


def fault_from_log(text: str, run_dir: str | os.PathLike) -> DiskFault | None:
    """For a trainer that died without recording its end: the disk fault its log shows, or a full disk."""
    measured = usage(run_dir)
    kind = kind_from_text(text)
    if kind is None:
        if measured is None or not measured.nearly_full:
            return None
        return DiskFault("disk_full", "ENOSPC", None, measured, inferred=True)
    return DiskFault(kind, _KIND_ERRNO[kind], None, measured)


def last_complete_checkpoint(run_dir: str | os.PathLike) -> str | None:
    """The newest checkpoint a resume can use (run/checkpoints.py's check), relative to the run folder."""
    check, _ = newest(check_checkpoints(Path(run_dir) / "checkpoints"))
    return f"checkpoints/{check.name}" if check is not None else None


# -- the reserve -----------------------------------------------------------------------------------------


def reserve_path(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / RESERVE_NAME


def make_reserve(run_dir: str | os.PathLike, size: int = RESERVE_BYTES) -> bool:
    """Write RUN_DIR/.reserve (random bytes, so a compressing filesystem cannot shrink it); False if no room."""
    path = reserve_path(run_dir)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(os.urandom(size))
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        return True
    except OSError:
        release_reserve(run_dir)
        return False


def release_reserve(run_dir: str | os.PathLike) -> int:
    """Delete the reserve; the bytes it freed (0 when there was none)."""
    path = reserve_path(run_dir)
    try:
        size = path.stat().st_size
        path.unlink()
        return size
    except OSError:
        return 0
