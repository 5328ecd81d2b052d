"""Which theme colour each status and severity is drawn in, for the app and for plain terminal output.

Colours live in the theme files only. A status or severity names a theme *role* (``success``,
``warning``, ``error`` ...); the app resolves roles through its current theme, and plain output (``runs``,
``watch --once``, ``train``) through the default theme's file, so both speak the same colours.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import cast

from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status

STATUS_ROLES = {
    Status.QUEUED: "secondary",
    Status.STARTING: "success",
    Status.RUNNING: "success",
    Status.STOPPING: "warning",
    Status.COMPLETED: "primary",
    Status.STOPPED: "warning",
    Status.FAILED: "error",
    Status.LOST: "accent",
}
SEVERITY_ROLES = {Severity.INFO: "primary", Severity.WARN: "warning", Severity.CRITICAL: "error"}
BOLD_STATUSES = (Status.RUNNING, Status.FAILED)


class Palette:
    """Rich styles for statuses and severities, from a theme's colours (role -> colour)."""

    def __init__(self, colors: Mapping[str, str]):
        self.colors = dict(colors)

    def role(self, role: str, bold: bool = False) -> str:
        color = self.colors.get(role, "")
        return f"bold {color}".strip() if bold else color

    def status(self, status: Status | str, bold: bool | None = None) -> str:
        parsed = Status.parse(status)
        if parsed is None:
            return ""
        return self.role(STATUS_ROLES[parsed], parsed in BOLD_STATUSES if bold is None else bold)

    def severity(self, severity: Severity | str, bold: bool | None = None) -> str:
        parsed = cast(Severity, Severity.parse(severity, Severity.WARN))  # the default is a member: never None
        return self.role(SEVERITY_ROLES[parsed], parsed is Severity.CRITICAL if bold is None else bold)


@cache
def plain_palette(theme: str | None = None) -> Palette:
    """The palette of a theme shipped with grpo-tui (the default one unless named), for plain output."""
    from .theming import DEFAULT_THEME, theme_colors

    return Palette(theme_colors(theme or DEFAULT_THEME))


def app_palette(app) -> Palette:
    """The palette of a running app's current theme."""
    theme = app.current_theme
    return Palette(
        {
            role: getattr(theme, role, None) or ""
            for role in ("primary", "secondary", "accent", "warning", "error", "success", "foreground")
        }
    )
