"""Where a run's alerts go: the run's targets and the user's settings file, and the body each target is sent.

URLs are secrets, checked, masked and kept out of config.yaml by ``config/notify_urls.py``: only the
real URLs of notify.json and of the settings file are sent to.

A webhook URL (``http``/``https``) gets the body its format says; any other scheme is apprise's
(``delivery.py`` sends either). The run's root sends (``trainer_core/alerting/notify.py``); docs/alerts.md is the
user's page. Stdlib only (PyYAML lazily, for the settings file; apprise lazily, in ``delivery.py``).
"""

from __future__ import annotations

import base64
import dataclasses
import difflib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import unquote, urlsplit, urlunsplit

from trainer_core.contract.config.apprise_urls import is_apprise, secret_parts
from trainer_core.contract.config.checks import word_list
from trainer_core.contract.config.notify_urls import (
    BODY_FORMATS,
    NOTIFY_SEVERITIES,
    BodyFormat,
    is_masked,
    mask,
    notify_problems,
    read_run_urls,
    url_problem,
)
from trainer_core.contract.config.user_files import SETTINGS, UserFileError
from trainer_core.contract.run.severity import Severity

SETTINGS_ENV = SETTINGS.env
AlertKind = Literal["warning", "auto_stop", "rollback", "run_end", "test"]
ALERT_KINDS: tuple[str, ...] = get_args(AlertKind)

SETTINGS_KEYS = ("notify", "notify_severity")
SLACK_HOSTS = ("hooks.slack.com",)
DISCORD_HOSTS = ("discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com")
NTFY_HOSTS = ("ntfy.sh",)
DISCORD_LIMIT = 2000  # characters of a Discord message's content


# -- one URL ------------------------------------------------------------------------------------------------


def body_format(url: str) -> BodyFormat:
    """The body a URL gets: its fragment (``#slack``, ``#discord``, ``#json``, ``#text``) if it has one, else
    from its host: Slack and Discord webhooks their own, ntfy.sh plain text, any other host the JSON record."""
    parts = urlsplit(url.strip())
    if parts.fragment in BODY_FORMATS:
        return parts.fragment  # type: ignore[return-value]  # checked just above
    host = (parts.hostname or "").lower()
    if host in SLACK_HOSTS:
        return "slack"
    if host in DISCORD_HOSTS:
        return "discord"
    if host in NTFY_HOSTS:
        return "text"
    return "json"


# -- where alerts go ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One URL alerts are sent to, with the lowest warning severity it gets and where it came from."""

    url: str
    min_severity: Severity = Severity.WARN
    source: Literal["run", "settings"] = "run"

    @property
    def masked(self) -> str:
        return mask(self.url)

    @property
    def kind(self) -> Literal["webhook", "apprise"]:
        """How alerts reach it: a POST of our own body, or through apprise to the service its scheme names."""
        return "apprise" if is_apprise(self.url) else "webhook"

    @property
    def format(self) -> BodyFormat:
        return body_format(self.url)

    def wants(self, alert: Alert) -> bool:
        """Warnings at or above ``min_severity``; an auto-stop, a rollback and the run's end always."""
        return alert.event != "warning" or alert.severity.rank >= self.min_severity.rank

    def endpoint(self) -> tuple[str, dict[str, str]]:
        """The URL a request goes to (no fragment, no user:password) and the headers that carry the rest
        (Basic authorization for ``user:password@``)."""
        parts = urlsplit(self.url.strip())
        headers = {}
        netloc = parts.netloc.rpartition("@")[2]
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, "")), headers

    def secrets(self) -> list[str]:
        """The parts of the URL that must never appear in a message (for scrubbing an error's text)."""
        if self.kind == "apprise":
            return secret_parts(self.url)
        parts = urlsplit(self.url.strip())
        found = [self.url, self.endpoint()[0], parts.path, parts.query, parts.password or "", parts.username or ""]
        return sorted((s for s in found if s and s != "/"), key=len, reverse=True)


@dataclass(frozen=True)
class Alert:
    """What happened, as every body format tells it. ``event``: a ``warning`` at or above the target's
    severity, an ``auto_stop`` (a --stop-on rule fired), a ``rollback`` (the run went back to an earlier checkpoint:
    ``rule`` the remedy's rule, ``step`` the checkpoint's step) or the ``run_end`` (``status`` completed, failed,
    stopped; a failed run's ``rule`` is its crash rule and ``error_kind`` its error event's kind), or a
    ``test`` (``grpo-tui notify-test``)."""

    event: AlertKind
    run_id: str
    host: str
    rule: str | None = None
    severity: Severity = Severity.WARN
    step: int = 0
    message: str = ""
    advice: str = ""
    status: str | None = None
    error_kind: str | None = None
    project: str | None = None
    time: float = dataclasses.field(default_factory=lambda: round(time.time(), 3))

    def headline(self) -> str:
        where = f"run {self.run_id} on {self.host}"
        if self.event == "test":
            return f"test alert from {self.host}"
        if self.event == "warning":
            return f"{self.severity.value.upper()} {self.rule} at step {self.step} in {where}"
        if self.event == "auto_stop":
            return f"auto-stop: {where} stops itself at step {self.step} ({self.rule})"
        if self.event == "rollback":
            cause = f" ({self.rule})" if self.rule else ""
            return f"rollback: {where} goes back to step {self.step}{cause}"
        cause = f" ({self.rule})" if self.status == "failed" and self.rule else ""
        return f"{where} {self.status} at step {self.step}{cause}"

    def text(self) -> str:
        """One line: the headline, the message and the advice."""
        line = f"[grpo-tui] {self.headline()}"
        if self.message:
            line += f": {self.message}"
        if self.advice:
            line += f" Advice: {self.advice}"
        return " ".join(line.split())

    def record(self) -> dict:
        """The generic receiver's body: every field, and the text line."""
        return {
            "source": "grpo-tui",
            "event": self.event,
            "run_id": self.run_id,
            "host": self.host,
            "project": self.project,
            "rule": self.rule,
            "severity": self.severity.value,
            "step": self.step,
            "message": self.message,
            "advice": self.advice,
            "status": self.status,
            "error_kind": self.error_kind,
            "time": self.time,
            "text": self.text(),
        }


def _slack_escape(text: str) -> str:
    """Slack reads ``<!channel>``-style mentions and links between angle brackets: keep them literal."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def request_body(fmt: BodyFormat, alert: Alert) -> tuple[bytes, dict[str, str]]:
    """The body of ``alert`` in ``fmt`` and its headers: Slack ``{"text"}``, Discord ``{"content"}`` (no
    mentions), ``text`` a plain line (ntfy: its title and priority as headers), ``json`` the whole record."""
    text = alert.text()
    if fmt == "slack":
        data: Any = {"text": _slack_escape(text)}
    elif fmt == "discord":
        data = {"content": text[:DISCORD_LIMIT], "allowed_mentions": {"parse": []}}
    elif fmt == "text":
        title = " ".join(alert.headline().encode("ascii", "replace").decode("ascii").split())  # one header line
        priority = "high" if alert.severity is Severity.CRITICAL else "default"
        return text.encode(), {"Content-Type": "text/plain; charset=utf-8", "Title": title, "Priority": priority}
    else:
        data = alert.record()
    body = json.dumps(data, allow_nan=False, ensure_ascii=False).encode()
    return body, {"Content-Type": "application/json"}


# -- the user's settings file -------------------------------------------------------------------------------


class SettingsError(ValueError):
    """A settings file that cannot be used: one line naming the file and the fix."""


@dataclass(frozen=True)
class NotifySettings:
    """The notify part of the user's settings file; ``severity`` None: the run's notify_severity applies."""

    urls: tuple[str, ...] = ()
    severity: Severity | None = None
    path: Path | None = None


def load_settings(path: Path | None = None) -> NotifySettings:
    """The notify settings of the user's settings file; empty when there is none. Raises SettingsError for a
    file that is refused, unreadable or not valid (its URLs masked in the message). Keys other than notify's
    are left to their readers, unless one looks like a misspelt notify key."""
    try:
        path, text = SETTINGS.read(path)
    except UserFileError as exc:
        raise SettingsError(str(exc)) from None
    if text is None:
        return NotifySettings(path=path)
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:  # its message quotes the text, which may hold a URL
        raise SettingsError(f"the settings file {path} is not valid YAML") from None
    if data is None:
        return NotifySettings(path=path)
    if not isinstance(data, dict):
        raise SettingsError(f"the settings file {path} must be a mapping of setting: value, got {type(data).__name__}")
    for key in data:
        close = difflib.get_close_matches(str(key), SETTINGS_KEYS, n=1, cutoff=0.75)
        if key not in SETTINGS_KEYS and close:
            raise SettingsError(f"the settings file {path} has an unknown key {key!r}; did you mean {close[0]!r}?")
    urls = word_list(data.get("notify") or [])
    severity = data.get("notify_severity", "warn")
    for problem in notify_problems(urls, severity, where=str(path)):
        raise SettingsError(str(problem))
    masked = [u for u in urls if is_masked(u)]
    if masked:
        raise SettingsError(
            f"the settings file {path} holds the masked URL {masked[0]}: write the real URL there (masked ones "
            "are what config.yaml keeps, and cannot be sent to)"
        )
    chosen = Severity(severity) if "notify_severity" in data else None
    return NotifySettings(tuple(dict.fromkeys(urls)), chosen, path)


def run_targets(
    run_dir: str | os.PathLike, config: Any, settings: NotifySettings | None = None
) -> tuple[list[Target], list[str]]:
    """Where this run's alerts go, and the masked URLs of its config that no real URL stands behind (a config
    copied from another run's config.yaml: those cannot be sent to).

    The run's own URLs are those of its config: real ones as they are, a masked one through the real URL of
    notify.json that masks to it. The settings file's follow, with its notify_severity (the run's if it sets
    none); a URL in both is the run's."""
    entries = [u for u in (config.notify if isinstance(config.notify, list) else []) if isinstance(u, str)]
    stored = read_run_urls(run_dir)
    wanted = {u for u in entries if is_masked(u)}
    urls = [u for u in entries if not is_masked(u) and url_problem(u) is None]
    urls += [u for u in stored if mask(u) in wanted]
    unmatched = [m for m in dict.fromkeys(entries) if is_masked(m) and all(mask(u) != m for u in stored)]
    severity = Severity(config.notify_severity) if config.notify_severity in NOTIFY_SEVERITIES else Severity.WARN
    targets = [Target(u, severity) for u in dict.fromkeys(urls)]
    if settings is not None:
        own = {t.url for t in targets}
        chosen = settings.severity or severity
        targets += [Target(u, chosen, "settings") for u in settings.urls if u not in own]
    return targets, unmatched


def settings_file() -> Path:
    """$GRPO_TUI_SETTINGS, else $XDG_CONFIG_HOME/grpo-tui/settings.yaml (~/.config by default)."""
    return SETTINGS.path()
