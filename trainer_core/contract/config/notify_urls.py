"""Notify URLs as a config value: checked, masked, and kept out of config.yaml.

A notify URL is a webhook (``http``/``https``) or an apprise URL (any other scheme: ``mailto://``,
``tgram://``, …; ``apprise_urls.py``). Either is a secret: the path of a Slack or Discord webhook is its
token, an ntfy topic is readable by anyone who knows it, a query string or ``user:pass@`` may carry a
password, and an apprise URL's host is often a token (``tgram://BOT_TOKEN/CHAT``). So a URL is shown and
stored only masked (``mask``: a webhook's scheme, host and port, then ``/***``; an apprise URL's scheme, then
``***``, since which of its parts are secret depends on the service) everywhere but one file: ``notify.json`` in
the run folder (0600, never mirrored or exported), which the run's root process reads, so a resumed run
keeps notifying. A masked URL read back from config.yaml is recognised (``is_masked``: exactly the form
``mask`` writes, never a URL that merely contains ``***``) and never sent to. URLs reach a run's processes
through that file, never through a command line (``ps`` shows command lines to every user of a machine);
``$GRPO_TUI_NOTIFY`` names URLs for a launch without putting them on one (``env_urls``). Where alerts go and
how they are sent is the alerts domain's (``contract/alerts/``). Stdlib only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from trainer_core.contract.config.apprise_urls import WEBHOOK_SCHEMES, apprise_problem, is_apprise, scheme_of
from trainer_core.contract.config.checks import ConfigError
from trainer_core.contract.run.atomic_files import write_bytes_atomic

NotifySeverity = Literal["info", "warn", "critical"]
NOTIFY_SEVERITIES: tuple[str, ...] = get_args(NotifySeverity)
BodyFormat = Literal["json", "slack", "discord", "text"]
BODY_FORMATS: tuple[str, ...] = get_args(BodyFormat)

MASK = "***"
NOTIFY_FILE = "notify.json"  # in the run folder: the run's own real URLs, mode 0600
NOTIFY_ENV = "GRPO_TUI_NOTIFY"  # URLs for `train`/`launch` that no command line shows (whitespace between)
NOTIFY_FD_ENV = "GRPO_TUI_NOTIFY_FD"  # a pipe `train` hands its own --notify URLs through when it re-executes
SCHEMES = WEBHOOK_SCHEMES
EXAMPLE = "--notify https://hooks.slack.com/services/T000/B000/XXXX"
# what ``mask`` writes: scheme://host[:port]/*** and maybe a body format, or an apprise URL's scheme://***;
# nothing else is a masked URL
_MASKED = re.compile(
    r"https?://(\[[0-9A-Za-z:.%]+\]|[^\s/?#@:\[\]]+)(:[0-9]{1,5})?/\*\*\*"
    rf"(#({'|'.join(BODY_FORMATS)}))?"
    r"|[a-z][a-z0-9+.-]*://\*\*\*"
)


def is_masked(url: str) -> bool:
    """A URL as config.yaml, events and logs show it: exactly the form ``mask`` gives (or ``***`` alone); never
    sent to. A URL that only contains ``***`` somewhere (a real token may) is not masked: it is a secret."""
    return isinstance(url, str) and (url == MASK or _MASKED.fullmatch(url) is not None)


def mask(url: str) -> str:
    """``url`` without anything that may be a secret: scheme, host and port, then ``/***`` (a body-format
    fragment such as ``#slack`` is kept: it is no secret, and it says how the URL is sent to)."""
    if is_masked(url):
        return url
    if is_apprise(url):
        return f"{scheme_of(url)}://{MASK}"
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname, parts.port
    except ValueError:
        return MASK
    if not parts.scheme or not host:
        return MASK
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    fragment = f"#{parts.fragment}" if parts.fragment in BODY_FORMATS else ""
    return f"{parts.scheme.lower()}://{netloc}/{MASK}{fragment}"


def env_urls(environ: dict[str, str] | None = None) -> list[str]:
    """The URLs ``$GRPO_TUI_NOTIFY`` names (separated by whitespace); [] when it is unset."""
    text = (os.environ if environ is None else environ).get(NOTIFY_ENV) or ""
    return text.split()


def masked_urls(urls: Any) -> Any:
    """``urls`` (a config's notify list) with each URL in its masked form: what may be shown or shared."""
    if not isinstance(urls, list):
        return urls
    return [mask(u) if isinstance(u, str) else u for u in urls]


def url_problem(url: Any) -> str | None:
    """Why ``url`` cannot be sent to (a phrase to follow its masked form, with the fix), or None. A masked URL
    passes: it is what config.yaml holds once a run has started, and a resume checks that config again."""
    fix = f"give an http:// or https:// webhook URL with a host (e.g. {EXAMPLE}) or an apprise URL such as mailto://"
    if not isinstance(url, str):
        return f"is not text: {fix}"
    if not url.strip():
        return f"is empty: {fix}"
    if any(c.isspace() for c in url.strip()):
        return "contains whitespace: give one URL per --notify (a URL has no spaces; encode one as %20)"
    if is_masked(url):
        return None
    if is_apprise(url):
        return apprise_problem(url)
    try:
        parts = urlsplit(url.strip())
        _ = parts.port  # raises ValueError for a port that is not a number in 0-65535
    except ValueError:
        return f"is not a valid URL (a bad port or address): {fix}"
    if parts.scheme.lower() not in SCHEMES:
        shown = f"'{parts.scheme}:'" if parts.scheme else "no scheme"
        return f"must start with a scheme and :// (it has {shown}): {fix}"
    if not parts.hostname:
        return f"has no host: {fix}"
    if parts.fragment and parts.fragment not in BODY_FORMATS:
        formats = ", ".join("#" + f for f in BODY_FORMATS)
        return f"ends with #{parts.fragment}, which is not a body format: drop it, or end the URL with one of {formats}"
    return None


def notify_problems(notify: Any, severity: Any, where: str = "") -> Iterator[ConfigError]:
    """A ConfigError for each notify URL that cannot be sent to and for a bad notify_severity; every URL in a
    message is masked. ``where``: the source named in messages (a settings file), '' for the run's config."""
    source = f" in {where}" if where else ""
    if not isinstance(notify, list):
        yield ConfigError(
            "notify", f"notify{source} must be a list of URLs, got {type(notify).__name__}. Example: {EXAMPLE}"
        )
    else:
        for url in notify:
            problem = url_problem(url)
            if problem:
                shown = mask(url) if isinstance(url, str) else f"<{type(url).__name__}>"
                yield ConfigError("notify", f"notify URL {shown}{source} {problem} (see docs/alerts.md).")
    if severity not in NOTIFY_SEVERITIES:
        yield ConfigError(
            "notify_severity",
            f"notify_severity{source} must be one of {', '.join(NOTIFY_SEVERITIES)}; got {severity!r}.",
        )


# -- the run folder's real URLs -----------------------------------------------------------------------------


def read_run_urls(run_dir: str | os.PathLike) -> list[str]:
    """The real URLs kept in the run folder's notify.json ([] when there is none, or it is not valid)."""
    try:
        data = json.loads((Path(run_dir) / NOTIFY_FILE).read_text())
    except (OSError, ValueError, RecursionError):  # missing, not UTF-8, not JSON, or nested too deep
        return []
    urls = data.get("notify") if isinstance(data, dict) else None
    if not isinstance(urls, list):
        return []
    return [u for u in urls if isinstance(u, str) and not is_masked(u) and url_problem(u) is None]


def store_run_urls(run_dir: str | os.PathLike, urls: Iterable[str]) -> Path:
    """Write notify.json, private to the user (mkstemp's 0600), replaced atomically."""
    path = Path(run_dir) / NOTIFY_FILE
    data = {"format_version": 1, "notify": list(dict.fromkeys(urls))}
    write_bytes_atomic(path, (json.dumps(data, indent=2) + "\n").encode())
    os.chmod(path, 0o600)
    return path


def secure_config(run_dir: str | os.PathLike, config: Any) -> Any | None:
    """Move the real URLs of ``config.notify`` into the run folder's notify.json and return the config to write
    as config.yaml: a copy whose URLs are masked. None when there is nothing to hide (every URL masked
    already, or none), so config.yaml stays as it is."""
    urls = config.notify if isinstance(config.notify, list) else []
    real = [u for u in urls if isinstance(u, str) and not is_masked(u)]
    if not real:
        return None
    stored = read_run_urls(run_dir)
    merged = list(dict.fromkeys([*stored, *real]))
    if merged != stored:
        store_run_urls(run_dir, merged)
    return dataclasses.replace(config, notify=masked_urls(urls))
