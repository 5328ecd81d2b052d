"""Which machines grpo-tui drives: the hosts file, and what a ``--host`` value means.

A host is an SSH destination as OpenSSH understands it (an alias of ``~/.ssh/config``, ``user@host``),
plus settings that say how to run grpo-tui there. They live in ``~/.config/grpo-tui/hosts.yaml`` (or the
file ``$GRPO_TUI_HOSTS`` names), a mapping keyed by the name used with ``--host``; a name that is not in
the file is a plain SSH destination with the defaults. See docs/hosts.md.

The file says which commands run on which machines, so it is refused as OpenSSH refuses such an
``~/.ssh/config``, by the one check of the user's settings files (``contract/config/user_files.py``).
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from trainer_core.contract.config.user_files import HOSTS, UserFileError

from .base import ExecutorError

HOSTS_ENV = HOSTS.env
LOCAL = "local"  # the name of this machine in lists and pickers
KEYS = ("ssh", "ssh_config", "ssh_options", "command", "runs_dir", "env", "executor")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class HostError(ExecutorError):
    """A host that cannot be used: one line naming the host and the fix."""


@dataclass(frozen=True)
class Host:
    """One remote machine. Every field but ``name`` has a default, so a bare SSH destination is a host."""

    name: str
    ssh: str = ""  # the destination handed to ssh; default: the name
    ssh_config: str | None = None  # an ssh config file (ssh -F)
    ssh_options: tuple[str, ...] = ()  # extra `-o` options, e.g. Port=2222
    command: str = "grpo-tui"  # grpo-tui on the host
    runs_dir: str | None = None  # the runs folder there (default: the host's own default)
    env: tuple[tuple[str, str], ...] = field(default=())  # variables set for every remote command
    # how the host is driven: an executor kind of ``registry.EXECUTORS``. Not in the repr, which names the SSH
    # connection (its ControlMaster socket): a setting that does not change how ssh connects stays out of it.
    executor: str = field(default="ssh", repr=False)

    @property
    def destination(self) -> str:
        return self.ssh or self.name


def hosts_file() -> Path:
    """$GRPO_TUI_HOSTS, else $XDG_CONFIG_HOME/grpo-tui/hosts.yaml (~/.config by default)."""
    return HOSTS.path()


def load_hosts(path: Path | None = None) -> dict[str, Host]:
    """The configured hosts, in file order; {} when there is no hosts file. Raises HostError for a bad one
    (refused as ``config/user_files.py`` says, unreadable, or not valid)."""
    try:
        path, text = HOSTS.read(path)
    except UserFileError as exc:
        raise HostError(str(exc)) from None
    if text is None:
        return {}
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise HostError(f"the hosts file {path} is not valid YAML: {exc}".replace("\n", " ")) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise HostError(f"the hosts file {path} must be a mapping of host names to settings, got {type(data).__name__}")
    return {str(name): _host(str(name), settings, path) for name, settings in data.items()}


def _host(name: str, settings, path: Path) -> Host:
    where = f"{path}: host {name!r}"
    if name == LOCAL:
        raise HostError(f"{where}: '{LOCAL}' names this machine; pick another name")
    if settings is None:
        settings = {}
    if not isinstance(settings, dict):
        raise HostError(f"{where} must be a mapping of settings ({', '.join(KEYS)}), got {settings!r}")
    for key in settings:
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), KEYS, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(KEYS)}"
            raise HostError(f"{where}: unknown key {key!r}{hint}")
    for key in ("ssh", "ssh_config", "command", "runs_dir", "executor"):
        value = settings.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise HostError(f"{where}: {key} must be a non-empty string, got {value!r}")
    options = settings.get("ssh_options") or []
    if not isinstance(options, list) or not all(isinstance(o, str) and "=" in o for o in options):
        raise HostError(f"{where}: ssh_options must be a list of 'Option=value' strings, got {options!r}")
    env = settings.get("env") or {}
    if not isinstance(env, dict):
        raise HostError(f"{where}: env must be a mapping of variable names to values, got {env!r}")
    for key in env:
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            raise HostError(f"{where}: env: {key!r} is not a variable name (letters, digits, _)")
    destination = settings.get("ssh") or name
    if destination.startswith("-"):
        raise HostError(f"{where}: the ssh destination {destination!r} starts with '-'")
    return Host(
        name=name,
        ssh=destination,
        ssh_config=os.path.expanduser(settings["ssh_config"]) if settings.get("ssh_config") else None,
        ssh_options=tuple(options),
        command=settings.get("command") or "grpo-tui",
        runs_dir=settings.get("runs_dir"),
        env=tuple((k, "" if v is None else str(v)) for k, v in env.items()),
        executor=settings.get("executor") or "ssh",
    )


def find_host(name: str, hosts: dict[str, Host] | None = None) -> Host:
    """The configured host of that name, else ``name`` as a plain SSH destination."""
    name = name.strip()
    if not name or name.startswith("-"):
        raise HostError(f"--host {name!r}: give a host name from {hosts_file()} or an SSH destination (user@machine)")
    hosts = load_hosts() if hosts is None else hosts
    return hosts.get(name) or Host(name=name)
