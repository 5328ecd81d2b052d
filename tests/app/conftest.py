"""What the app-layer tests share: waiting under Pilot, and reading what a screen shows."""

from __future__ import annotations

import time

from textual.app import App


async def wait_until(pilot, predicate, timeout: float = 60.0, what: str = "the expected state") -> None:
    """Let the app run until ``predicate()`` holds; fail after ``timeout`` seconds (a loaded machine is slow)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"the app did not reach {what} within {timeout:.0f}s")
        await pilot.pause(0.05)


def header_text(screen) -> str:
    return str(screen.query_one("#header").render())


def screen_text(app: App) -> str:
    """Every cell the compositor would draw, as text; and no segment may carry a hyperlink."""
    strips = app.screen._compositor.render_strips()
    for strip in strips:
        for segment in strip:
            assert segment.style is None or not segment.style.link, f"a hyperlink reached the screen: {segment!r}"
    return "\n".join(strip.text for strip in strips)
