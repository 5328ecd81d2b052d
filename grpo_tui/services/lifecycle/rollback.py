"""Rolling a run back: stop it if it is live, then resume it from an earlier checkpoint with changed settings.

A rollback is a resume (resuming.py) from the checkpoint the user names, with the settings a resume may change
(``--set``) and a reason; the leg it starts writes a ``rewound`` event (docs/run-format.md). A live run is
stopped first, gracefully and with a checkpoint, by the same stop as ``grpo-tui stop``; a stop that leaves a
process behind ends the rollback there, before anything is resumed.
"""

from __future__ import annotations

from grpo_tui.services.catalog.status import live_status
from grpo_tui.services.lifecycle.supervisor import DEFAULT_STOP_TIMEOUT, stop_run
from grpo_tui.services.records.stop_outcome import StopOutcome
from trainer_core.contract.config.run_config import ConfigError
from trainer_core.contract.health.remedy_plan import BASE
from trainer_core.contract.run.folder import RunFolder

REASON_MAX = 500
ROLLBACK = "grpo-tui rollback"  # who asked, in the stop request of a live run


def checkpoint_of(target: str) -> str:
    """``--to``'s value as the checkpoint a resume takes: best, last, a step, or base (the base model: the leg starts
    over at step 0 with fresh weights and optimizer, the run's history kept). ConfigError names the value and the
    choices."""
    target = target.strip()
    if target in ("best", "last", BASE) or (target.isdigit() and int(target) > 0):
        return target
    raise ConfigError("to", f"--to takes best, last, base or a checkpoint's step number, got {target!r}.")


def checked_reason(reason: str | None) -> str | None:
    if reason is not None and len(reason) > REASON_MAX:
        raise ConfigError("reason", f"--reason is {len(reason)} characters; keep it under {REASON_MAX}.")
    return reason or None


def stop_first(
    folder: RunFolder, timeout: float = DEFAULT_STOP_TIMEOUT, on_wait=None, by: str = ROLLBACK
) -> StopOutcome | None:
    """Stop the run if it is live (None when it was not), saying ``by`` who asked. ConfigError when the stop failed
    or left a process: the run is not resumed then."""
    if not live_status(folder).is_live:
        return None
    outcome = stop_run(folder, timeout=timeout, on_wait=on_wait, by=by)
    if outcome.failed:
        raise ConfigError("rollback", f"{outcome.message} The run was not rolled back.")
    return outcome
