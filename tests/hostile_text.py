"""Text as hostile as real data gets, for the property-based tests of every display path.

Chat templates full of brackets (``[INST]``, ``[/INST]``), Rich and Textual markup (``[/]``, ``[link=…]``,
``[@click=…]``), ANSI colour, OSC 52 (sets the clipboard), OSC 8 (hyperlinks), cursor moves, C1 controls,
NUL, DEL and carriage returns, mixed with arbitrary Unicode.
"""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import strategies as st

from grpo_tui.safe_text import has_control
from grpo_tui.services.catalog.folders import RunInfo
from trainer_core.contract.run.status import Status

FRAGMENTS = (
    "[",
    "]",
    "[/]",
    "[/INST]",
    "[INST] hi [/INST]",
    "<s>[INST]",
    "[link=https://evil.example]x[/link]",
    "[bold red]loud",
    "[@click=app.quit]q[/]",
    "[red",
    "\\[",
    "]]",
    "[[x]]",
    "\\",
    "\x1b[31mred\x1b[0m",
    "\x1b]52;c;aGVsbG8=\x07",
    "\x1b]52;c;aGVsbG8=\x1b\\",
    "\x1b]8;;https://evil\x1b\\link\x1b]8;;\x1b\\",
    "\x1b[2J\x1b[H",
    "\x1b[?1049h",
    "\x1bP+q\x1b\\",
    "\x9b31m",
    "\x9d52;c;eA==\x9c",
    "\x00",
    "\x07",
    "\x08",
    "\r",
    "\x7f",
    "\x1b",
    "\t",
    "\n",
    "\u202e",
    "é",
    "😀",
    "ｗｉｄｅ",
)

hostile = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=8).map("".join)
# a name that can be a file or folder name too (run ids, project names)
hostile_name = hostile.map(lambda s: s.replace("/", "[").replace("\x00", "␀").strip() or "x").filter(
    lambda s: s not in (".", "..") and len(s.encode()) < 200
)


# a control character the terminal would act on, as one placeholder-free test: ESC, C1, and C0 but \t \n
def assert_no_control(shown: str, where: str) -> None:
    bad = sorted({hex(ord(ch)) for ch in shown if has_control(ch)})
    assert not bad, f"{where}: control characters reached the output: {bad}"


def hostile_run_info(text: str, host: str | None = None) -> RunInfo:
    """A runs-list row whose every free-text field is ``text`` (queued, so its queue reason shows too)."""
    return RunInfo(
        run_id=text,
        path=Path("/x"),
        project=text,
        model=text,
        status=Status.QUEUED,
        step=3,
        total=10,
        last_reward=0.5,
        started=time.time(),
        ended=None,
        duration=12.0,
        warnings=1,
        last_warning=text,
        exit_reason=text,
        host=host,
        queue_reason=text,
        name=text,
        tags=(text,),
        notes=text,
    )
