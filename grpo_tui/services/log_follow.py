"""Following a growing trainer.log: ``grpo-tui logs -f`` and the monitor's Log tab read it the same way.

Reads resume at a byte offset, and the bytes are decoded incrementally, so a character the trainer had
written only half of when a read happened comes out whole on the next read instead of as two '�'.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path

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
