"""Who asked for a stop, and the parts of a stop that the supervisor and the Slurm stop share.

A stop request names who asked (``grpo-tui stop (CLI)``, ``grpo-tui stop (the app)``, ``grpo-tui stop (the
app on laptop)``), so the run's StopRequested event and its exit reason say it (the trainer reads the stop
file: training/stopping.py; a TERM after the request keeps its reason: contract/run/slurm_job.py). Who asked
may come from another machine (``stop --by``, which a viewing machine's SSH executor passes): it is data, cut
to ``ASKER_MAX`` characters with every control character removed before it reaches the run folder.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from grpo_tui.services.records.stop_outcome import StopOutcome
from trainer_core.contract.run.folder import RunFolder

ASKER_MAX = 80
APP = "the app"
CLI = "CLI"


def asker(text: str | None) -> str:
    """``text`` as who asked: control and format characters removed, spaces folded, at most ``ASKER_MAX``."""
    spaced = "".join(" " if ch.isspace() else ch for ch in text or "")  # a newline or a tab is a space
    kept = "".join(ch for ch in spaced if not unicodedata.category(ch).startswith("C"))
    return " ".join(kept.split())[:ASKER_MAX].strip()


def stop_reason(by: str | None) -> str:
    """The reason a stop request from grpo-tui gives: ``grpo-tui stop (WHO)``, or ``grpo-tui stop`` unnamed."""
    who = asker(by)
    return f"grpo-tui stop ({who})" if who else "grpo-tui stop"


def request_stop(folder: RunFolder, by: str | None) -> None:
    """Ask ``folder``'s run to stop at the end of its step, saying who asked."""
    folder.request_stop(stop_reason(by))


def stopped(
    folder: RunFolder,
    graceful: bool,
    forced: Iterable[int],
    left: Iterable[int],
    notes: Iterable[str],
    refused: Iterable[str] = (),
) -> StopOutcome:
    """The outcome of a stop of a run that was running, with the status the run now has."""
    return StopOutcome.of(
        folder.run_id,
        was_running=True,
        graceful=graceful,
        forced=forced,
        left=left,
        status=folder.status(),
        refused=refused,
        notes=notes,
    )
