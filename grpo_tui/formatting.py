"""Plain-words formatting of a run's numbers, shared by the app, the tables and the live views."""

from __future__ import annotations

import time


def short_model(model: str | None, width: int = 32) -> str:
    """A model path or hub id as its last component, cut to ``width``."""
    if not model:
        return "-"
    name = str(model).rstrip("/").rsplit("/", 1)[-1] or str(model)
    return name if len(name) <= width else name[: width - 1] + "…"


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def format_time(stamp: float | None, now: float | None = None) -> str:
    """Local time, as ``ls -l`` does: month, day and time this year, the date alone before."""
    if stamp is None:
        return "-"
    local = time.localtime(stamp)
    this_year = local.tm_year == time.localtime(now).tm_year
    return time.strftime("%m-%d %H:%M" if this_year else "%Y-%m-%d", local)


def format_steps(step: int | None, total: int | None) -> str:
    if step is None:
        return f"-/{total}" if total else "-"
    return f"{step}/{total}" if total else str(step)
