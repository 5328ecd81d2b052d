"""The user's own settings files (``~/.config/grpo-tui/hosts.yaml``, ``settings.yaml``): where each is found,
and the one check that refuses a file someone else could have written; and the user's cache folder.

Such a file says which commands run on which machines, or where a run's alerts go, so it is refused the way
OpenSSH refuses such an ``~/.ssh/config`` ("Bad owner or permissions"): when group or others may write it,
or when it belongs to another user than root or the user. Stdlib only.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


def user_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_CACHE_HOME/grpo-tui (~/.cache by default) in ``environ`` (this process's by default): what grpo-tui
    keeps between runs on this machine (tiny models, copies of hosts' runs, SSH control sockets, vLLM's compiled
    kernels)."""
    env = os.environ if environ is None else environ
    home = env.get("HOME") or os.path.expanduser("~")
    return Path(env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")) / "grpo-tui"


class UserFileError(ValueError):
    """A settings file that cannot be used: one line naming the file and the fix."""


@dataclass(frozen=True)
class UserFile:
    """One kind of settings file: its name under the config folder, the variable that overrides its place, what
    it is called in messages and what it decides (said when it is refused)."""

    name: str  # hosts.yaml
    env: str  # GRPO_TUI_HOSTS
    kind: str  # hosts file
    decides: str  # which commands run on your hosts

    def path(self) -> Path:
        """$ENV, else $XDG_CONFIG_HOME/grpo-tui/NAME (~/.config by default)."""
        named = os.environ.get(self.env)
        if named:
            return Path(named).expanduser()
        config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        return Path(config) / "grpo-tui" / self.name

    def check_permissions(self, path: Path, info: os.stat_result) -> None:
        """UserFileError unless the file is owned by the user (or root) and writable by no one else. A character
        device (``$ENV=/dev/null``: none) holds no settings to plant."""
        if stat.S_ISCHR(info.st_mode):
            return
        if info.st_uid not in (0, os.getuid()):
            raise UserFileError(
                f"Bad owner or permissions on {path}: it belongs to uid {info.st_uid}, not to you "
                f"(uid {os.getuid()}) or root, and it says {self.decides}; use a {self.kind} of your own "
                f"(chown it, or copy it and point ${self.env} at the copy)"
            )
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o022:
            raise UserFileError(
                f"Bad owner or permissions on {path}: mode {mode:o} lets group or others write it, and it says "
                f"{self.decides}; fix: chmod go-w {path}"
            )

    def read(self, path: Path | None = None) -> tuple[Path, str | None]:
        """The file's place and its text (None when there is none), checked on the file actually read, not one
        swapped in after a check. Raises UserFileError for a refused, unreadable or non-UTF-8 file."""
        path = self.path() if path is None else path
        try:
            with open(path, "rb") as fh:
                self.check_permissions(path, os.fstat(fh.fileno()))
                return path, fh.read().decode("utf-8")
        except FileNotFoundError:
            return path, None
        except OSError as exc:
            raise UserFileError(f"cannot read the {self.kind} {path}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise UserFileError(f"the {self.kind} {path} is not UTF-8 text: {exc}") from None


HOSTS = UserFile("hosts.yaml", "GRPO_TUI_HOSTS", "hosts file", "which commands run on your hosts")
SETTINGS = UserFile("settings.yaml", "GRPO_TUI_SETTINGS", "settings file", "where your runs' alerts go")
