"""The runs list kept current for the app: each refresh re-reads only the runs whose files changed.

The runs screen refreshes every 2 s, and a shared runs folder may hold thousands of finished runs: reading
each one again every time keeps a core busy for nothing. A refresh lists the runs dir once and stats each
run's files; a run is read again only when one of them changed (inode, size or mtime) or while it is live
(its duration grows, its process may die, a stall may begin). For a run listed from its summary the state
file alone tells (a summary holds until the state changes: docs/run-format.md); for the others, the state
and the events, and the log of a failed or lost one (its crash verdict). A finished run changes rarely (a
resume), so the screen checks each one every few refreshes, a share of them each time. Nothing is written:
run folders may be read-only for a viewer.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grpo_tui.services.catalog.folders import folder_entries, run_info
from grpo_tui.services.records.run_row import RunInfo
from trainer_core.contract.run.folder import RunFolder, resolve_runs_dir
from trainer_core.contract.run.state import read_state
from trainer_core.contract.run.status import Status
from trainer_core.contract.run.summary import valid_summary

STATE, EVENTS, LOG = os.sep + "state.json", os.sep + "events.jsonl", os.sep + "trainer.log"
WATCHED = (STATE, EVENTS, LOG)
OTHER_RUN_FILES = (os.sep + "config.yaml", EVENTS)


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


@dataclass(frozen=True)
class RunListUpdate:
    """Every run, newest first, and what changed since the previous refresh (run ids)."""

    runs: list[RunInfo]
    changed: frozenset[str]  # new runs, and runs whose row differs
    removed: frozenset[str]

    def __bool__(self) -> bool:
        return bool(self.changed or self.removed)


@dataclass(frozen=True)
class _Entry:
    stamps: tuple
    info: RunInfo
    watched: int  # how many of WATCHED can change the row: 1 for a summarised run, else 2 or 3
    kept: bool  # not live: kept until a stamp changes


class RunList:
    """One runs dir's list, refreshed by ``refresh()``. One refresh at a time (the caller serialises them).

    ``stable_every``: a run that is not live has its files checked every this many refreshes (staggered, so
    each refresh stats a share of them); new, removed and live runs are seen at every refresh, and a
    ``full`` refresh checks everything.
    """

    def __init__(self, runs_dir: str | os.PathLike | None, stable_every: int = 1):
        self.runs_dir = runs_dir
        self.stable_every = max(1, stable_every)
        self._entries: dict[str, _Entry] = {}
        self._round = 0
        self.reads = 0  # runs read rather than kept: what a refresh cost (tests and the bench look)

    def refresh(
        self,
        now: float | None = None,
        full: bool = False,
        first: int = 0,
        on_first: Callable[[list[RunInfo]], None] | None = None,
    ) -> RunListUpdate:
        """``on_first``: called with the newest ``first`` runs as soon as they are read, when the list is new
        and holds more (a screen can show them while the rest are read)."""
        now = time.time() if now is None else now
        entries: dict[str, _Entry] = {}
        runs: list[RunInfo] = []
        changed = set()
        known, every = self._entries.get, 1 if full else self.stable_every
        self._round += 1
        folders = folder_entries(resolve_runs_dir(self.runs_dir))
        early = first if on_first is not None and not self._entries and len(folders) > first > 0 else -1
        for i, (name, path) in enumerate(folders, self._round):
            if len(runs) == early and on_first is not None:  # early is -1 without on_first
                on_first(list(runs))
                early = -1
            old = known(name)
            if old is not None and old.kept and (i % every or old.stamps == _stamps(path, old.watched)):
                entry = old
            else:
                entry = self._read(path, now)
                if entry is None:
                    continue
                self.reads += 1
                if old is None or old.info != entry.info:
                    changed.add(name)
            entries[name] = entry
            runs.append(entry.info)
        removed = frozenset(self._entries.keys() - entries.keys())
        self._entries = entries
        return RunListUpdate(runs, frozenset(changed), removed)

    def _read(self, path: str, now: float) -> _Entry | None:
        # stamps first: a file that changes while it is read shows as changed at the next refresh
        stamps = _stamps(path, len(WATCHED))
        state = read_state(path + STATE)
        if state.missing and not any(os.path.exists(path + name) for name in OTHER_RUN_FILES):
            return None  # not a run folder (yet)
        info = run_info(RunFolder(Path(path)), now, state)
        status = info.status
        if status.is_final and valid_summary(state, stamps[1][1] if stamps[1] else None) is not None:
            watched = 1  # its row is its state's summary
        elif status in (Status.FAILED, Status.LOST):
            watched = 3  # its row has a crash verdict, read from the log too
        else:
            watched = 2
        return _Entry(stamps[:watched], info, watched, not status.is_live)


def _stamps(path: str, watched: int) -> tuple:
    """The stamps of the first ``watched`` of WATCHED: what says a run changed. 10k runs, every few seconds:
    string paths, one stat each."""
    return tuple(_stamp(path + name) for name in WATCHED[:watched])
