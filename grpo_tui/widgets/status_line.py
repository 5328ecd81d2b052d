"""A one-line note that says how something went: hidden when empty, else an error, a success or an info.

The launch screen has several of them (under the GPUs, under the config file, beside Launch), and each
widget that owns one should not restyle it: the look lives here, in theme variables only.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from ..safe_text import clean

KINDS = ("-error", "-ok", "-info")


class StatusLine(Static):
    """``show(text, kind)`` with kind one of ``-error``, ``-ok``, ``-info``; empty text hides the line."""

    DEFAULT_CSS = """
    StatusLine { display: none; }
    StatusLine.-error { display: block; color: $error; }
    StatusLine.-ok { display: block; color: $success; }
    StatusLine.-info { display: block; color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes, markup=False)

    @property
    def text(self) -> str:
        return str(self.visual)

    def show(self, text: str, kind: str = "") -> None:
        if self.text == text and (not text or self.has_class(kind)):
            return
        self.update(Content(clean(text)))
        for cls in KINDS:
            self.set_class(bool(text) and cls == kind, cls)
