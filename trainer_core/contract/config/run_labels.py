"""A run's name, tags and notes: what a person calls a run, beside its timestamp id.

They are shown in the runs list, the monitor's header, ``runs --json`` and Compare, and a run folder may come from
anyone: so each is a bounded string without control characters (a tag also without spaces, so a filter and a
repeated ``--tag`` read it back alike). Stdlib only, like the rest of the contract layer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from trainer_core.contract.config.checks import ConfigError

MAX_NAME = 100
MAX_TAGS = 20
MAX_TAG = 40
MAX_NOTES = 2000
TAG = re.compile(r"[A-Za-z0-9._:-]+\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _shown(value: str, limit: int = 60) -> str:
    return repr(value if len(value) <= limit else value[: limit - 3] + "...")


def _text_problem(name: str, value: Any, limit: int, *, newlines: bool = False) -> ConfigError | None:
    if not isinstance(value, str):
        return ConfigError(name, f"{name} must be text, got {type(value).__name__} {value!r}.")
    if len(value) > limit:
        return ConfigError(
            name, f"{name} is {len(value)} characters long ({_shown(value)}); shorten it to at most {limit}."
        )
    text = value.replace("\n", "").replace("\t", "") if newlines else value
    if _CONTROL.search(text):
        allowed = " (line breaks and tabs are fine)" if newlines else ""
        return ConfigError(name, f"{name} {value!r} holds a control character; remove it{allowed}.")
    return None


def label_problems(name: Any, tags: Any, notes: Any) -> Iterator[ConfigError]:
    """Every problem with a run's name, tags and notes, each naming the field, the value and the fix."""
    problem = _text_problem("name", name, MAX_NAME)
    if problem:
        yield problem
    if not isinstance(tags, list):
        yield ConfigError("tags", f"tags must be a list of tags, got {type(tags).__name__} {tags!r}.")
    else:
        if len(tags) > MAX_TAGS:
            yield ConfigError("tags", f"tags has {len(tags)} tags; keep at most {MAX_TAGS}.")
        for tag in tags:
            if not isinstance(tag, str) or not TAG.match(tag) or len(tag) > MAX_TAG:
                yield ConfigError(
                    "tags",
                    f"tag {tag!r} is not a tag: use 1-{MAX_TAG} letters, digits, '.', '_', ':' or '-' "
                    "(e.g. --tag baseline --tag lr:1e-5).",
                )
    problem = _text_problem("notes", notes, MAX_NOTES, newlines=True)
    if problem:
        yield problem


__all__ = ["MAX_NAME", "MAX_NOTES", "MAX_TAG", "MAX_TAGS", "label_problems"]
