"""A critical warning reaches the person at the terminal: the bell, or an OSC 9 desktop notification.

The escape sequences are built here from text that went through ``safe_text.clean_line`` (no control
character of the warning can end the sequence early or start another), and are cut to a length terminals
accept. Inside tmux an OSC 9 is wrapped in tmux's passthrough (``ESC P tmux; ... ESC \\``, which needs
``set -g allow-passthrough on``), since tmux swallows OSCs it does not know.
"""

from __future__ import annotations

from typing import Literal, get_args

from .safe_text import clean_line

AlertMode = Literal["bell", "desktop", "off"]
ALERT_MODES: tuple[str, ...] = get_args(AlertMode)
DEFAULT_ALERT: AlertMode = "bell"
MAX_TEXT = 200
BEL, ESC = "\x07", "\x1b"


def alert_sequence(mode: AlertMode, text: str, in_tmux: bool = False) -> str:
    """What to write to the terminal for a critical warning described by ``text``; '' for ``off``."""
    if mode == "off":
        return ""
    if mode == "bell":
        return BEL
    body = clean_line(text).replace(";", ",")[:MAX_TEXT]  # ';' separates OSC 9 parameters in some terminals
    osc = f"{ESC}]9;{body}{BEL}"
    if in_tmux:
        return f"{ESC}Ptmux;{osc.replace(ESC, ESC + ESC)}{ESC}\\"
    return osc


def parse_mode(value: object, source: str) -> AlertMode:
    """A setting's value as an AlertMode; ValueError naming ``source``, the value and the choices."""
    for mode in get_args(AlertMode):
        if value == mode:
            return mode
    raise ValueError(f"{source}: alert must be one of {', '.join(ALERT_MODES)}; got {value!r}")
