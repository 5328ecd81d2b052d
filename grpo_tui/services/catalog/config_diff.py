"""The settings that differ between runs: what Compare lists under its legend.

Each run's config.yaml is read as it is (it may hold anything) and flattened one level (``grpo_args.max_grad_norm``,
``slurm.partition``), so a changed GRPOConfig key is named rather than a whole mapping. Only keys whose values differ
are kept; keys that differ on every run by nature (the reward inspection's id) or that Compare shows elsewhere (the
name and tags are in the legend, the notes are free text) are left out. Values are turned into text here and shown
literally by the screen.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

SKIPPED = frozenset({"inspection", "name", "tags", "notes"})
"""Keys that differ between any two runs, or that Compare shows elsewhere."""
MISSING = "(unset)"
"""How a key that a run's config.yaml lacks is shown (a config from an older grpo-tui)."""
MAX_VALUE = 60  # characters of one value shown


def flat(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with each mapping's keys as ``parent.key`` (one level: a deeper value stays whole)."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        if str(key) in SKIPPED:
            continue
        if isinstance(value, Mapping) and value:
            for inner, item in value.items():
                out[f"{key}.{inner}"] = item
        else:
            out[str(key)] = value
    return out


def shown(value: Any) -> str:
    """A value as one line of text: a string as it is, anything else as JSON; long ones cut."""
    if value is MISSING:
        return MISSING
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, default=str, allow_nan=True)
        except (TypeError, ValueError):
            text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def differing(configs: Sequence[Mapping[str, Any]]) -> list[tuple[str, tuple[str, ...]]]:
    """``(key, each run's value as text)`` for every key whose values are not all the same, in the order the keys
    first appear; empty for fewer than two configs."""
    if len(configs) < 2:
        return []
    flats = [flat(config) for config in configs]
    keys = dict.fromkeys(key for one in flats for key in one)
    out = []
    for key in keys:
        values = [one.get(key, MISSING) for one in flats]
        if any(v != values[0] or type(v) is not type(values[0]) for v in values[1:]):
            texts = tuple(shown(v) for v in values)
            if len(set(texts)) > 1:
                out.append((key, texts))
    return out


__all__ = ["MISSING", "SKIPPED", "differing", "flat", "shown"]
