"""Following a growing trainer.log: ``grpo-tui logs -f`` and the monitor's Log tab read it the same way.

Reads resume at a byte offset, and the bytes are decoded incrementally, so a character the trainer had
written only half of when a read happened comes out whole on the next read instead of as two '�'.
``log_chunks`` is a run's log for whoever shows it (a local executor's ``logs``): text as written, escapes
included; making it safe to show is the shower's (``safe_text``).
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Iterator
from pathlib import Path

from grpo_tui.services.catalog.status import is_live, live_status
from trainer_core.contract.run.folder import RunFolder

CHUNK = 1024 * 1024


class LogFollower:
    """The text appended to ``path`` since the last read.

    ``limit``: read at most the file's last ``limit`` bytes each time (a viewer that only shows the end
    skips what it would drop anyway). A file truncated by hand is read again from its start.
    """

    def __init__(self, path: str | Path, limit: int | None = None):
        self.path = Path(path)
        self.limit = limit
        self.offset = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def chunks(self) -> Iterator[str]:
        try:
            fh = open(self.path, "rb")
        except OSError:  # not there yet, or unreadable: nothing new to show
            return
        with fh:
            size = fh.seek(0, 2)
            start = 0 if size < self.offset else self.offset
            if self.limit is not None:
                start = max(start, size - self.limit)
            if start != self.offset:  # started over or skipped ahead: a half character before is gone
                self._decoder.reset()
            fh.seek(start)
            self.offset = start
            while chunk := fh.read(CHUNK):
                self.offset += len(chunk)
                yield self._decoder.decode(chunk)

    def read(self) -> str:
        return "".join(self.chunks())

    def close(self) -> str:
        """What is left of a character cut short at the very end of the file (as '�'), once no more will come."""
        return self._decoder.decode(b"", final=True)


def log_chunks(folder: RunFolder, follow: bool = False, poll: float = 0.2) -> Iterator[str]:
    """trainer.log's text so far; with ``follow``, then what is appended until the run is no longer live."""
    log = LogFollower(folder.log_file)
    while True:
        # the status is read before the log so the last read catches everything written before the end
        status = live_status(folder)
        yield from log.chunks()
        if not follow or not is_live(status):
            tail = log.close()
            if tail:
                yield tail
            return
        time.sleep(poll)
