"""The one way text from data, runs and hosts is shown: literal, and with no control character left in it.

Prompts, completions, log lines, run ids, metric names, warning messages and whatever a remote host sends
are data. Rich and Textual parse a plain ``str`` as markup (``[/]`` raises, ``[link=…]`` makes a hyperlink),
and neither strips ESC, so one bracket can take a screen down and one escape sequence in a dataset can set
the user's clipboard (OSC 52) or move the cursor. Everything that shows such text goes through here:

- ``clean``: C0 and C1 control characters other than newline and tab become visible placeholders
  (ESC → ``␛``, NUL → ``␀``, DEL → ``␡``, C1 → ``\\x9b``), so no escape reaches the terminal;
- ``literal``: a ``rich.text.Text`` of the cleaned text, never parsed as markup (Textual widgets, table
  cells, titles and Rich printers all take it);
- ``from_ansi``: colour and weight from a log's SGR sequences as parsed style, with links and every other
  sequence dropped, and the rest cleaned.

``notify`` in the app cleans its message and title too (``app.py``), and piped CLI output goes through
``clean`` (see docs/security.md).
"""

from __future__ import annotations

import re
from itertools import pairwise

from rich.style import Style
from rich.text import Span, Text

_KEPT = {0x09, 0x0A}  # tab and newline


def _placeholder(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␀ … ␟, ␛ for ESC
    if code == 0x7F:
        return "␡"
    return f"\\x{code:02x}"  # C1: no picture exists; shown as the escape a programmer would type


_TABLE = {code: _placeholder(code) for code in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if code not in _KEPT}


def clean(text: object) -> str:
    """``text`` as a str with every C0/C1 control character but newline and tab replaced by a placeholder."""
    return str(text).translate(_TABLE)


def clean_line(text: object) -> str:
    """``clean`` for a one-line place (a cell, a title): newlines and tabs become spaces as well."""
    return clean(text).replace("\n", " ").replace("\t", " ")


def literal(text: object, style: str | Style = "", *, end: str = "\n", no_wrap: bool | None = None) -> Text:
    """A Text that shows ``text`` as it is: no markup is parsed, no control character is left."""
    return Text(clean(text), style=style, end=end, no_wrap=no_wrap)


def has_control(text: str) -> bool:
    """Whether ``text`` still holds a character ``clean`` would replace (what the tests look for)."""
    return any(ord(ch) in _TABLE for ch in text)


_RAW_IN_JSON = re.compile(rb"\x7f|\xc2[\x80-\x9f]")  # JSON escapes C0 itself; DEL and C1 it leaves raw


def json_bytes(encoded: bytes) -> bytes:
    """Encoded JSON with DEL and the C1 controls written as ``\\u00XX`` escapes: the same value, and no raw
    control byte for a terminal that a piped ``--json`` or ``events`` line may land on."""
    return _RAW_IN_JSON.sub(lambda m: b"\\u%04x" % ord(m.group().decode()), encoded)


_JSON_TABLE = {**_TABLE, **{code: f"\\u{code:04x}" for code in (0x7F, *range(0x80, 0xA0))}}


def clean_json(text: str) -> str:
    """``clean`` for JSON text from elsewhere: DEL and C1 become ``\\u00XX`` escapes (the same value inside a
    JSON string), C0 the placeholders; a valid JSON document holds no raw C0, so it stays valid."""
    return text.translate(_JSON_TABLE)


def _no_link(style: str | Style) -> str | Style:
    return style.clear_meta_and_links() if isinstance(style, Style) else style


def from_ansi(text: str) -> Text:
    """Styled text from a log that may hold ANSI SGR colour: styles parsed, links and other sequences dropped.

    ``Text.from_ansi`` turns SGR into styles and OSC 8 into links; links are removed here (a log line must
    not become a hyperlink), and whatever control character it let through (a lone ESC, a C1 CSI) is
    replaced by its placeholder. Lengths are unchanged by ``clean`` (one placeholder per character, C1 aside),
    so spans are rebuilt only when a C1 character widened the text.
    """
    parsed = Text.from_ansi(text.replace("\r\n", "\n"), end="")
    plain = parsed.plain
    spans = [Span(s.start, s.end, _no_link(s.style)) for s in parsed.spans]
    shown = clean(plain)
    if len(shown) == len(plain):  # every placeholder took one character's place: the spans still fit
        parsed.plain = shown
        parsed.spans = spans
        return parsed
    out = Text(end="")
    starts = sorted({0, len(plain), *(s.start for s in spans), *(s.end for s in spans)})
    for a, b in pairwise(starts):
        styles = [s.style for s in spans if s.start <= a and b <= s.end]
        out.append(
            clean(plain[a:b]),
            style=Style.combine([st if isinstance(st, Style) else Style.parse(st) for st in styles])
            if styles
            else None,
        )
    return out
