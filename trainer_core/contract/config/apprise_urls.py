"""Notify URLs of the services apprise speaks to (``mailto://``, ``tgram://``, ``msteams://``, ``ntfy://``, …).

A notify URL whose scheme is not ``http``/``https`` is an apprise URL: apprise (a dependency of every
install) knows over a hundred services, each by its scheme, and checks a URL's parts itself. This module asks it
whether a URL is one it can send to, without a secret of the URL reaching a log: apprise logs a URL it
cannot parse in full, so its logger never passes records on to the process's handlers (``quiet``) and
what it says is collected per call and scrubbed before it is shown (``secret_parts``).

apprise is imported lazily: a config with only webhook URLs never loads it.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import unquote

WEBHOOK_SCHEMES = ("http", "https")
_SCHEME = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
_PART = re.compile(r"[^/:@?&=#,\s]+")


def scheme_of(url: str) -> str:
    """The URL's scheme in lower case ('' when it has none)."""
    match = _SCHEME.match(url.strip()) if isinstance(url, str) else None
    return match.group("scheme").lower() if match else ""


def is_apprise(url: str) -> bool:
    """A URL with a scheme other than http(s): apprise sends to it."""
    scheme = scheme_of(url)
    return bool(scheme) and scheme not in WEBHOOK_SCHEMES


def quiet():
    """The apprise module, its logger cut off from the process's handlers (it may log a whole URL)."""
    import apprise

    logging.getLogger("apprise").propagate = False
    return apprise


def known_schemes() -> frozenset[str]:
    """Every scheme apprise can send to."""
    from apprise.manager_plugins import NotificationManager

    quiet()
    return frozenset(str(s).lower() for s in NotificationManager().schemas())


def apprise_problem(url: str) -> str | None:
    """Why apprise cannot send to ``url`` (a phrase to follow its masked form, with the fix), or None."""
    scheme = scheme_of(url)
    if scheme not in known_schemes():
        return (
            f"has the scheme '{scheme}://', which is neither http(s) nor a service apprise knows: give a webhook URL "
            "or an apprise URL such as mailto://, tgram://, workflows:// (Teams), ntfy://"
        )
    apprise = quiet()
    if apprise.Apprise.instantiate(url.strip(), suppress_exceptions=True) is None:
        return f"is not a {scheme}:// URL apprise can read (a part is missing or malformed): see its form"
    return None


def secret_parts(url: str) -> list[str]:
    """Every part of an apprise URL that may be a secret (host, user, password, path parts, query values),
    longest first, for scrubbing a message that may quote them."""
    rest = _SCHEME.sub("", url.strip(), count=1)
    parts: set[str] = {url, url.strip(), rest}
    for part in _PART.findall(rest):
        if len(part) >= 3:
            parts |= {part, unquote(part)}
    return sorted((p for p in parts if p), key=len, reverse=True)


def scrub(text: Any, secrets: list[str], mask: str = "***") -> str:
    """``text`` with each of ``secrets`` replaced by ``mask``."""
    text = str(text)
    for secret in secrets:
        text = text.replace(secret, mask)
    return text
