"""A long event backlog read in a child process, so the app starts, and answers keys, while it is read.

Folding a 100k-step run (about 100 MB of JSON) takes the reader most of a second of CPU, and a reader
thread holds the GIL for all of it: the app would start late and the screen stutter. A ``Backlog``
started for a file of at least BACKLOG_BYTES runs ``python -m grpo_tui.services.stream.backlog RUN`` at once,
on another core; the child folds the file with the same ``RunStream`` the reader uses and sends the
stream back pickled through a pipe. The reader adopts it and polls on from its offset, so nothing is
read twice or missed. A child that fails or sends something else costs nothing but time: the reader then
reads the file itself, as it does for a short one.

The child never imports from the folder the app was started in (a ``trainer_core.py`` or ``orjson.py``
lying there would otherwise run as our code, and write the pickle the app loads): it runs with ``-P``
(Python 3.11+: no working folder on ``sys.path``) and, for 3.10, in the folder that holds this package,
whose modules are ours anyway; so it is given the run folder's absolute path.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeGuard, cast

from grpo_tui.services.stream.folded import RunStream
from trainer_core.contract.run.folder import RunFolder

BACKLOG_BYTES = 8 * 1024 * 1024
SAFE_CWD = Path(__file__).resolve().parents[2]  # the folder holding grpo_tui: nothing foreign to import there
SAFE_PATH = ["-P"] if sys.version_info >= (3, 11) else []  # -P: no working folder on the child's sys.path


class Backlog:
    """The start of ``folder``'s stream: read by a child process when the file is long, else here."""

    def __init__(self, folder: RunFolder, min_bytes: int | None = None):
        self.folder = folder
        self.path = folder.path.resolve()
        min_bytes = BACKLOG_BYTES if min_bytes is None else min_bytes
        self.proc: subprocess.Popen[bytes] | None = None
        self.in_child = False  # whether the stream handed over came from the child
        try:
            size = folder.events_file.stat().st_size
        except OSError:
            size = 0
        if size >= min_bytes:
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=SAFE_CWD,
            )

    def command(self) -> list[str]:
        return [sys.executable, *SAFE_PATH, "-m", "grpo_tui.services.stream.backlog", os.fspath(self.path)]

    def stream(self, cancelled: Callable[[], bool] = lambda: False) -> RunStream:
        """The stream, folded as far as the child read (blocks this thread until it is done); a fresh
        ``RunStream`` when there is no child, it failed, or ``close()`` was called meanwhile."""
        proc = self.proc
        if proc is None:
            return RunStream(self.folder)
        try:
            stdout = cast(IO[bytes], proc.stdout)  # started with stdout=PIPE
            with stdout:
                stream = pickle.load(stdout)
        except Exception:  # the child died or was killed: read here instead
            stream = None
        finally:
            self.proc = None
        if proc.wait() != 0 or cancelled() or not self._belongs(stream):
            return RunStream(self.folder)
        self.in_child = True
        stream.folder = self.folder  # the child was given the absolute path; callers know the folder as theirs
        return stream

    def _belongs(self, stream: object) -> TypeGuard[RunStream]:
        return isinstance(stream, RunStream) and stream.folder.path == self.path

    def close(self) -> None:
        """Stop a child still reading (the screen closed first)."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()


def main(argv: list[str]) -> int:
    stream = RunStream(RunFolder(Path(argv[0])))
    stream.poll()
    try:
        pickle.dump(stream, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)
        sys.stdout.flush()
    except BrokenPipeError:  # the app went away first
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
