"""What the app-layer tests share: reading what a screen shows. Waiting under Pilot is tests/helpers.py's
``wait_until``, imported here too for the tests that take it from this module."""

from __future__ import annotations

from textual.app import App

from ..helpers import wait_until

__all__ = ["header_text", "screen_text", "wait_until"]


def header_text(screen) -> str:
    return str(screen.query_one("#header").render())


def screen_text(app: App) -> str:
    """Every cell the compositor would draw, as text; and no segment may carry a hyperlink."""
    strips = app.screen._compositor.render_strips()
    for strip in strips:
        for segment in strip:
            assert segment.style is None or not segment.style.link, f"a hyperlink reached the screen: {segment!r}"
    return "\n".join(strip.text for strip in strips)
