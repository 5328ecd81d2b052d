"""What the app says when it crashes: a short notice that names a private file holding the traceback.

Textual's own crash screen is a Rich traceback with each frame's local variables: the samples' text, a
config's notify URLs, whatever the failing code held. That is printed to the terminal, maybe into a shared
tmux scrollback or a CI log. Instead the traceback (plain text, no locals) goes to a file of the user's own
(mode 0600, under ``$XDG_STATE_HOME/grpo-tui/crashes``, else ``~/.local/state/grpo-tui/crashes``), and the
terminal gets the exception's type, where it was raised and that file's path: no data values. The exit code is
non-zero (``run_app``).
"""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path

from rich.text import Text


def crash_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "grpo-tui" / "crashes"


def write_crash(error: BaseException) -> Path | None:
    """The traceback of ``error`` (no locals) in a new private file; None when it cannot be written."""
    folder = crash_dir()
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = folder / f"crash-{stamp}-{os.getpid()}.txt"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError:
        return None
    return path


def where_raised(error: BaseException) -> str:
    """``file:line in function`` of the innermost frame: code, not data."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "unknown place"
    last = frames[-1]
    return f"{Path(last.filename).name}:{last.lineno} in {last.name}"


def crash_notice(error: BaseException, path: Path | None) -> Text:
    """What the terminal shows: the exception's type and place, and where the traceback is. Its message is
    left out, since it may quote data (a KeyError names the key, a ValueError the value)."""
    kind = type(error).__qualname__
    if path is None:
        saved = "its traceback could not be saved (the crash folder cannot be written)"
    else:
        saved = f"the traceback is in {path}"
    return Text(
        f"grpo-tui crashed: {kind} at {where_raised(error)}; {saved}. "
        "Please report it with that file (check it first: it may quote your data).",
        style="bold red",
    )
