"""Which lines of a run are its live history, once a leg has gone back to an older checkpoint.

A resume from a checkpoint older than the run's last step (by the user, a rule's remedy, a viewer) starts a leg
that logs steps the run has logged before. events.jsonl stays append-only, so the earlier leg's later steps stay
in it; a ``rewound`` event, written before the new leg's ``run_started``, says from which step the run went back
to which. The rule (docs/run-format.md): after a ``rewound`` event with ``to_step`` S, every metrics, warning,
eval and checkpoint line of earlier legs with a step past S is *abandoned*; the live history is the earlier legs
up to S, then the new leg. Every reader (the summary, the catalog, the stream and its charts, the health rules,
the ledger) asks here, so the rule is written once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from trainer_core.contract.run.events import Checkpoint, Eval, Event, HealthWarning, Metrics, Rewound
from trainer_core.contract.run.json_values import whole_or_none

STEPPED = (Metrics, HealthWarning, Eval, Checkpoint)
"""The events a rewind can abandon: those of the run's history, each at its step (a ``final`` checkpoint is
the end of a leg, never abandoned)."""


def stepped(event: Event) -> bool:
    return isinstance(event, STEPPED) and not (isinstance(event, Checkpoint) and event.final)


@dataclass(frozen=True)
class History:
    """A run's events split by the rule: ``live`` and ``abandoned`` (each in file order) and its ``rewinds``."""

    live: tuple[Event, ...]
    abandoned: tuple[Event, ...]
    rewinds: tuple[Rewound, ...]


def abandoned_mask(events: Sequence[Event]) -> list[bool]:
    """For each of ``events`` (a run's, in file order; any subset that holds its ``rewound`` events), whether a
    later rewind abandoned it: an event is abandoned when a ``rewound`` event after it goes back to a step
    before its own."""
    mask = [False] * len(events)
    floor = math.inf  # the lowest to_step of the rewinds after the event
    for i in range(len(events) - 1, -1, -1):
        event = events[i]
        if isinstance(event, Rewound):
            floor = min(floor, event.to_step)
        elif floor < math.inf and stepped(event) and getattr(event, "step", 0) > floor:
            mask[i] = True
    return mask


def split(events: Iterable[Event]) -> History:
    """``events`` (in file order) as their live history, their abandoned lines and their rewinds."""
    events = list(events)
    mask = abandoned_mask(events)
    return History(
        tuple(e for e, gone in zip(events, mask) if not gone),
        tuple(e for e, gone in zip(events, mask) if gone),
        tuple(e for e in events if isinstance(e, Rewound)),
    )


def live(events: Iterable[Event]) -> list[Event]:
    """The live history of ``events`` (in file order): what every reader shows and judges."""
    return list(split(events).live)


def abandoned_checkpoints(events: Iterable[Event]) -> set[int]:
    """The steps whose saved checkpoint (``checkpoint-N``) is abandoned: the newest ``checkpoint`` event of the step
    came before a rewind to an earlier step (a later leg that saves the step again makes it live)."""
    events = list(events)
    newest: dict[int, bool] = {}
    for event, gone in zip(events, abandoned_mask(events)):
        if isinstance(event, Checkpoint) and not event.final:
            newest[event.step] = gone
    return {step for step, gone in newest.items() if gone}


def live_eval_steps(events: Iterable[Event]) -> set[int]:
    """The steps of the evals in the live history."""
    return {e.step for e in live(events) if isinstance(e, Eval)}


def rewind_count(events: Iterable[Event]) -> int:
    return sum(isinstance(e, Rewound) for e in events)


def live_samples(samples: Sequence[dict], rewinds: Sequence[Rewound]) -> list[dict]:
    """samples.jsonl's records (in file order: the file or its end) less those of the steps a rewind abandoned.

    A sample line has no place among the events, so the legs are told apart by the steps: the lines of one step
    in a row are a block, and a block is abandoned when a later block has a step at or below its own and a rewind
    went back below it (the new leg logs that step again, or one before it). A record without a whole step stays."""
    if not rewinds:
        return list(samples)
    lowest = min(r.to_step for r in rewinds)
    keep = [True] * len(samples)
    later = math.inf  # the lowest step of the blocks after the current one
    i = len(samples)
    while i > 0:
        step = _step(samples[i - 1])
        j = i - 1
        while j > 0 and _step(samples[j - 1]) == step:
            j -= 1
        if step is not None:
            if lowest < step and later <= step:
                keep[j:i] = [False] * (i - j)
            later = min(later, step)
        i = j
    return [sample for sample, kept in zip(samples, keep) if kept]


def _step(sample: object) -> int | None:
    step = sample.get("step") if isinstance(sample, dict) else None
    return whole_or_none(step)
