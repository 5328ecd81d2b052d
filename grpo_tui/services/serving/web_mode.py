"""The app's read-only mode: what ``grpo-tui serve`` gives a browser unless it was started with --allow-control.

A browser that reaches the served page may be a teammate's or a phone's, so by default it may watch but not
launch, stop, resume or extend a run. The served process learns this from ``READ_ONLY_ENV`` (textual-serve
starts each app with the server's environment), and every action that acts on a run is wrapped by
``control``: the one place that refuses, with the same notice, whatever the key, button or palette entry
that triggered it. Nothing here imports Textual; ``control`` needs only the ``app`` of the screen it wraps.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

READ_ONLY_ENV = "GRPO_TUI_READ_ONLY"
READ_ONLY_NOTICE = "read-only: started with grpo-tui serve without --allow-control"

P = ParamSpec("P")
R = TypeVar("R")


def read_only_from_env() -> bool:
    """Whether this process is an app served read-only (``READ_ONLY_ENV`` set to 1)."""
    return os.environ.get(READ_ONLY_ENV, "") == "1"


class _Notifier(Protocol):
    def notify(self, message: str, *, severity: Any = ..., timeout: float | None = ...) -> None: ...


class _OnApp(Protocol):
    @property
    def app(self) -> Any: ...


S = TypeVar("S", bound=_OnApp)


def refused(app: _Notifier) -> bool:
    """True, after telling the user why, when ``app`` is read-only."""
    if not getattr(app, "read_only", False):
        return False
    app.notify(READ_ONLY_NOTICE, severity="warning", timeout=6)
    return True


def control(action: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R | None]:
    """An action that launches, stops, resumes or extends a run: in a read-only app it only says so."""

    @functools.wraps(action)
    def gated(self: S, *args: P.args, **kwargs: P.kwargs) -> R | None:
        if refused(self.app):
            return None
        return action(self, *args, **kwargs)

    return gated
