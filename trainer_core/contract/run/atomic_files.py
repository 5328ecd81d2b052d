"""Files replaced in one step: a reader sees the old file or the new one, never half of one.

Apart from run/folder.py so that every module of the contract layer that writes such a file (the run
folder's, notify.json) can import it without importing the run folder.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_json_atomic(path: Path, data: dict) -> None:
    write_bytes_atomic(path, (json.dumps(data, indent=2, allow_nan=False) + "\n").encode())


def write_bytes_atomic(path: Path, data: bytes, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` so that a reader sees the old file or the new one, never half of one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
