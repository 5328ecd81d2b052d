"""Where a run's alerts go: notify URLs checked and masked, their body formats, the user's settings file, and
the run folder's private list of the real URLs.

A webhook URL is a secret: the path of a Slack or Discord webhook is its token, an ntfy topic is readable by
anyone who knows it, and a query string or ``user:pass@`` may carry a password. So a URL is shown and stored
only masked (``mask``: the scheme, host and port, then ``/***``) everywhere but one file: ``notify.json`` in
the run folder (0600, never mirrored or exported), which the run's root process reads, so a resumed run
keeps notifying. A masked URL read back from config.yaml is recognised (``is_masked``) and never sent to.

The sender is ``trainer_core/notify.py``; docs/alerts.md is the user's page. Stdlib only (PyYAML lazily, for
the settings file), like the rest of the contract layer.
"""

from __future__ import annotations

import base64
import dataclasses
import difflib
import json
import os
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import unquote, urlsplit, urlunsplit

from .config_checks import ConfigError, word_list
from .severity import Severity

NotifySeverity = Literal["info", "warn", "critical"]
NOTIFY_SEVERITIES: tuple[str, ...] = get_args(NotifySeverity)
BodyFormat = Literal["json", "slack", "discord", "text"]
BODY_FORMATS: tuple[str, ...] = get_args(BodyFormat)
AlertKind = Literal["warning", "auto_stop", "run_end"]
ALERT_KINDS: tuple[str, ...] = get_args(AlertKind)

MASK = "***"
NOTIFY_FILE = "notify.json"  # in the run folder: the run's own real URLs, mode 0600
SETTINGS_ENV = "GRPO_TUI_SETTINGS"
SETTINGS_KEYS = ("notify", "notify_severity")
SCHEMES = ("http", "https")
SLACK_HOSTS = ("hooks.slack.com",)
DISCORD_HOSTS = ("discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com")
NTFY_HOSTS = ("ntfy.sh",)
DISCORD_LIMIT = 2000  # characters of a Discord message's content
EXAMPLE = "--notify https://hooks.slack.com/services/T000/B000/XXXX"


# -- one URL ------------------------------------------------------------------------------------------------


def is_masked(url: str) -> bool:
    """A URL as config.yaml, events and logs show it: its secret parts replaced by ``***``; never sent to."""
    return MASK in url


def mask(url: str) -> str:
    """``url`` without anything that may be a secret: scheme, host and port, then ``/***`` (a body-format
    fragment such as ``#slack`` is kept: it is no secret, and it says how the URL is sent to)."""
    if is_masked(url):
        return url
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


def url_problem(url: Any) -> str | None:
    """Why ``url`` cannot be sent to (a phrase to follow its masked form, with the fix), or None. A masked URL
    passes: it is what config.yaml holds once a run has started, and a resume checks that config again."""
    fix = f"give an http:// or https:// URL with a host, e.g. {EXAMPLE}"
    if not isinstance(url, str):
        return f"is not text: {fix}"
    if not url.strip():
        return f"is empty: {fix}"
    if any(c.isspace() for c in url.strip()):
        return "contains whitespace: give one URL per --notify (a URL has no spaces; encode one as %20)"
    try:
        parts = urlsplit(url.strip())
        _ = parts.port  # raises ValueError for a port that is not a number in 0-65535
    except ValueError:
        return f"is not a valid URL (a bad port or address): {fix}"
    if parts.scheme.lower() not in SCHEMES:
        shown = f"'{parts.scheme}://'" if parts.scheme else "no scheme"
        return f"must start with http:// or https:// (it has {shown}): {fix}"
    if not parts.hostname:
        return f"has no host: {fix}"
    if parts.fragment and parts.fragment not in BODY_FORMATS:
        formats = ", ".join("#" + f for f in BODY_FORMATS)
        return f"ends with #{parts.fragment}, which is not a body format: drop it, or end the URL with one of {formats}"
    return None


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
    def format(self) -> BodyFormat:
        return body_format(self.url)

    def wants(self, alert: Alert) -> bool:
        """Warnings at or above ``min_severity``; an auto-stop and the run's end always."""
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
        parts = urlsplit(self.url.strip())
        found = [self.url, self.endpoint()[0], parts.path, parts.query, parts.password or "", parts.username or ""]
        return sorted((s for s in found if s and s != "/"), key=len, reverse=True)


@dataclass(frozen=True)
class Alert:
    """What happened, as every body format tells it. ``event``: a ``warning`` at or above the target's
    severity, an ``auto_stop`` (a --stop-on rule fired) or the ``run_end`` (``status`` completed, failed,
    stopped; a failed run's ``rule`` is its crash rule and ``error_kind`` its error event's kind)."""

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
        if self.event == "warning":
            return f"{self.severity.value.upper()} {self.rule} at step {self.step} in {where}"
        if self.event == "auto_stop":
            return f"auto-stop: {where} stops itself at step {self.step} ({self.rule})"
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


def settings_file() -> Path:
    """$GRPO_TUI_SETTINGS, else $XDG_CONFIG_HOME/grpo-tui/settings.yaml (~/.config by default), as the hosts
    file is found (grpo_tui/executors/hosts.py)."""
    named = os.environ.get(SETTINGS_ENV)
    if named:
        return Path(named).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "grpo-tui" / "settings.yaml"


def check_permissions(path: Path, info: os.stat_result) -> None:
    """SettingsError unless the file is owned by the user (or root) and writable by no one else: it says where
    a run's alerts go. A character device (``$GRPO_TUI_SETTINGS=/dev/null``: no settings) holds none."""
    if stat.S_ISCHR(info.st_mode):
        return
    if info.st_uid not in (0, os.getuid()):
        raise SettingsError(
            f"Bad owner or permissions on {path}: it belongs to uid {info.st_uid}, not to you (uid {os.getuid()}) "
            f"or root, and it says where your runs' alerts go; use a settings file of your own (chown it, or copy "
            f"it and point ${SETTINGS_ENV} at the copy)"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o022:
        raise SettingsError(
            f"Bad owner or permissions on {path}: mode {mode:o} lets group or others write it, and it says where "
            f"your runs' alerts go; fix: chmod go-w {path}"
        )


def load_settings(path: Path | None = None) -> NotifySettings:
    """The notify settings of the user's settings file; empty when there is none. Raises SettingsError for a
    file that is refused, unreadable or not valid (its URLs masked in the message). Keys other than notify's
    are left to their readers, unless one looks like a misspelt notify key."""
    path = settings_file() if path is None else path
    try:
        with open(path, "rb") as fh:
            check_permissions(path, os.fstat(fh.fileno()))  # the file read, not one swapped in after a check
            text = fh.read().decode("utf-8")
    except FileNotFoundError:
        return NotifySettings(path=path)
    except OSError as exc:
        raise SettingsError(f"cannot read the settings file {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise SettingsError(f"the settings file {path} is not UTF-8 text: {exc}") from None
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


# -- the run folder's real URLs -----------------------------------------------------------------------------


def read_run_urls(run_dir: str | os.PathLike) -> list[str]:
    """The real URLs kept in the run folder's notify.json ([] when there is none, or it is not valid)."""
    try:
        data = json.loads((Path(run_dir) / NOTIFY_FILE).read_text())
    except (OSError, ValueError):
        return []
    urls = data.get("notify") if isinstance(data, dict) else None
    if not isinstance(urls, list):
        return []
    return [u for u in urls if isinstance(u, str) and not is_masked(u) and url_problem(u) is None]


def store_run_urls(run_dir: str | os.PathLike, urls: Iterable[str]) -> Path:
    """Write notify.json, private to the user (mkstemp's 0600), replaced atomically."""
    from .atomic_files import write_bytes_atomic

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
    return dataclasses.replace(config, notify=[mask(u) if isinstance(u, str) else u for u in urls])


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


__all__ = [
    "ALERT_KINDS",
    "BODY_FORMATS",
    "NOTIFY_FILE",
    "NOTIFY_SEVERITIES",
    "SETTINGS_ENV",
    "Alert",
    "BodyFormat",
    "NotifySettings",
    "NotifySeverity",
    "SettingsError",
    "Target",
    "body_format",
    "is_masked",
    "load_settings",
    "mask",
    "notify_problems",
    "read_run_urls",
    "request_body",
    "run_targets",
    "secure_config",
    "settings_file",
    "store_run_urls",
    "url_problem",
]
