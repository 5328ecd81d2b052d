"""One SSH connection per host, through the system OpenSSH client, and the remote command line.

OpenSSH rather than a Python SSH library: it honours everything in a user's ssh config (ProxyJump, the
agent, hardware keys, certificates, the 2FA prompts of HPC login nodes), and its ControlMaster gives one
authenticated connection per host that every command and stream reuses, so a poll costs a round trip, not
a handshake. The master is started explicitly (``-f -N``, its stderr in a file, so a failure to connect is
read and named), lives in a private folder (0700) and exits after ``CONTROL_PERSIST`` idle seconds. That
folder is checked without following links (``os.lstat``): the fallback in /tmp is a name another user can
take first, as a symlink to a folder of theirs or as their own folder, and a socket there is theirs to use.

An unknown or changed host key is never accepted: ``StrictHostKeyChecking=yes`` is given before anything
from the user's config (OpenSSH keeps the first value it reads), and the error says how to accept the key
after checking it. The remote command is one string for the remote shell: it is built only by
``remote_command``, which quotes every argument, so user values reach the remote grpo-tui as data.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import shlex
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from trainer_core.contract.config.user_files import user_cache_dir

from ..safe_text import clean, clean_json
from .hosts import Host, HostError, hosts_file

CONTROL_PERSIST = 600  # seconds a master stays up with no session
CONNECT_TIMEOUT = 15
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes on Linux, 104 on macOS
CONTROL_DIR_ENV = "GRPO_TUI_SSH_DIR"


def control_dir() -> Path:
    """The private folder for master sockets: $GRPO_TUI_SSH_DIR, else $XDG_RUNTIME_DIR/grpo-tui-ssh, else
    ~/.cache/grpo-tui/ssh; /tmp/grpo-tui-ssh-UID when that path is too long for a socket. Created 0700, and
    refused if another user owns it or others can enter it."""
    named = os.environ.get(CONTROL_DIR_ENV)
    if named:
        if len(named) + 51 > SOCKET_PATH_MAX:
            raise HostError(
                f"${CONTROL_DIR_ENV} ({named}) is too long for SSH control sockets: keep it under "
                f"{SOCKET_PATH_MAX - 51} characters"
            )
        return _private_dir(Path(named))
    candidates = []
    if os.environ.get("XDG_RUNTIME_DIR"):
        candidates.append(os.path.join(os.environ["XDG_RUNTIME_DIR"], "grpo-tui-ssh"))
    candidates += [
        str(user_cache_dir() / "ssh"),
        os.path.join(tempfile.gettempdir(), f"grpo-tui-ssh-{os.getuid()}"),
    ]
    for candidate in candidates:
        if candidate and len(candidate) + 51 <= SOCKET_PATH_MAX:  # + "/", a 9-character prefix and the %C hash
            return _private_dir(Path(candidate))
    raise HostError("no folder for SSH control sockets has a path short enough: set GRPO_TUI_SSH_DIR to a short one")


def _private_dir(path: Path) -> Path:
    """``path``, made 0700 if missing; HostError unless it is a real folder (not a link), ours, 0700."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(path, 0o700)
        os.chmod(path, 0o700)  # ours, just made: whatever the umask took away
    except FileExistsError:
        pass
    except OSError as exc:
        raise HostError(
            f"cannot create the SSH control folder {path}: {exc.strerror}; set ${CONTROL_DIR_ENV} to a folder of yours"
        ) from None
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise HostError(
            f"the SSH control folder {path} is a symbolic link; grpo-tui keeps "
            f"its SSH sockets only in a real folder of yours: remove the link (rm {path}) or set "
            f"${CONTROL_DIR_ENV} to a private folder"
        )
    if not stat.S_ISDIR(info.st_mode):
        raise HostError(f"the SSH control folder {path} is not a folder: remove it or set ${CONTROL_DIR_ENV}")
    if info.st_uid != os.getuid():
        raise HostError(
            f"the SSH control folder {path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()}); "
            f"grpo-tui keeps its SSH sockets only in a folder of yours: set ${CONTROL_DIR_ENV} to one"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        raise HostError(
            f"the SSH control folder {path} must be yours and private (mode {stat.S_IMODE(info.st_mode):o}, "
            f"not 700): chmod 700 {path}"
        )
    return path


def remote_command(host: Host, args: list[str]) -> str:
    """The command line the remote shell runs: ``env K=V … grpo-tui ARGS``, every word quoted.

    ``command`` is the user's own setting and may hold words (``/opt/venv/bin/python -m grpo_tui``); a
    leading ``~/`` stays expandable. Everything in ``args`` is data.
    """
    words = shlex.split(host.command)
    first = words[0]
    head = '"$HOME"/' + shlex.quote(first[2:]) if first.startswith("~/") else shlex.quote(first)
    line = [head, *map(shlex.quote, words[1:]), *map(shlex.quote, args)]
    if host.env:
        line = ["env", *(shlex.quote(f"{k}={v}") for k, v in host.env), *line]
    return " ".join(line)


class Connection:
    """The SSH link to one host. ``ensure()`` brings the master up (or raises HostError naming the host and
    the fix); ``run`` and ``popen`` go through it. Thread-safe."""

    def __init__(self, host: Host, interactive: bool = False):
        self.host = host
        self.interactive = interactive  # may ssh ask for a password or a 2FA code on the terminal?
        self._lock = threading.Lock()
        # one master per host entry, not per endpoint: two entries for one machine may differ in config or options
        self._tag = hashlib.sha1(repr(host).encode()).hexdigest()[:8]

    # -- argv -------------------------------------------------------------------------------------------

    def _base(self) -> list[str]:
        argv = ["ssh"]
        if self.host.ssh_config:
            argv += ["-F", self.host.ssh_config]
        argv += [
            "-o",
            f"ControlPath={control_dir()}/{self._tag}-%C",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            f"ConnectTimeout={CONNECT_TIMEOUT}",
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
        ]
        for option in self.host.ssh_options:
            argv += ["-o", option]
        return argv

    def command_argv(self, args: list[str]) -> list[str]:
        """ssh's argv for running ``grpo-tui ARGS`` on the host through the master."""
        return [
            *self._base(),
            "-o",
            "ControlMaster=no",
            "-o",
            "BatchMode=yes",
            "-T",
            "--",
            self.host.destination,
            remote_command(self.host, args),
        ]

    def ssh_hint(self) -> str:
        """The ssh command a user can type to reach the host as we do."""
        config = f"-F {shlex.quote(self.host.ssh_config)} " if self.host.ssh_config else ""
        return f"ssh {config}{shlex.quote(self.host.destination)}"

    # -- the master -------------------------------------------------------------------------------------

    def is_up(self) -> bool:
        check = [*self._base(), "-O", "check", "--", self.host.destination]
        return subprocess.run(check, stdin=subprocess.DEVNULL, capture_output=True, timeout=10).returncode == 0

    def ensure(self) -> None:
        """Bring the shared connection up, unless it is; raises HostError when the host cannot be reached."""
        with self._lock:
            if self.is_up():
                return
            argv = [
                *self._base(),
                "-o",
                "ControlMaster=yes",
                "-o",
                f"ControlPersist={CONTROL_PERSIST}",
                "-o",
                f"BatchMode={'no' if self.interactive else 'yes'}",
                "-f",
                "-N",
                "--",
                self.host.destination,
            ]
            with tempfile.TemporaryFile() as err:
                try:
                    code = subprocess.run(
                        argv,
                        stdin=None if self.interactive else subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                        timeout=CONNECT_TIMEOUT + 60,
                    ).returncode
                except subprocess.TimeoutExpired:
                    raise HostError(
                        f"host {self.host.name}: no answer within {CONNECT_TIMEOUT + 60}s; "
                        f"check that `{self.ssh_hint()}` works"
                    ) from None
                err.seek(0)
                stderr = err.read().decode(errors="replace")
            if code != 0:
                raise connect_error(self, stderr)

    def close(self) -> None:
        """Stop the master (its sessions end with it)."""
        subprocess.run(
            [*self._base(), "-O", "exit", "--", self.host.destination],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
        )

    # -- commands ---------------------------------------------------------------------------------------

    def run(self, args: list[str], input: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run ``grpo-tui ARGS`` there, output captured (bytes). A lost connection raises HostError."""
        self.ensure()
        try:
            done = subprocess.run(
                self.command_argv(args),
                input=input,
                capture_output=True,
                timeout=timeout,
                stdin=None if input is not None else subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise HostError(
                f"host {self.host.name}: `grpo-tui {args[0]}` gave no answer within {timeout:.0f}s"
            ) from None
        check_remote(self, done.returncode, done.stderr.decode(errors="replace"))
        return done

    def popen(self, args: list[str], **kwargs) -> subprocess.Popen:
        """Start ``grpo-tui ARGS`` there; the caller reads it and checks its exit with ``check_remote``."""
        self.ensure()
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.Popen(self.command_argv(args), **kwargs)


def connect_error(conn: Connection, stderr: str) -> HostError:
    """The one line for a master that did not come up, from what ssh said."""
    name, hint = conn.host.name, conn.ssh_hint()
    said = " ".join(line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("debug"))
    text = stderr.lower()
    if "host key verification failed" in text or "host key is known" in text or "identification has changed" in text:
        changed = "identification has changed" in text
        what = "has CHANGED since you last connected" if changed else "is not in your known_hosts"
        return HostError(
            f"host {name}: its SSH host key {what}; grpo-tui never accepts a host key by itself: check the "
            f"key's fingerprint with the host's admin, then accept it once with `{hint}`, and retry"
        )
    if "permission denied" in text or "too many authentication failures" in text:
        return HostError(
            f"host {name}: SSH authentication failed ({said}); make sure `{hint}` logs in without "
            "a prompt (an ssh-agent key, or run `grpo-tui hosts` in a terminal first for a password or 2FA)"
        )
    for marker in (
        "could not resolve hostname",
        "connection refused",
        "connection timed out",
        "no route to host",
        "network is unreachable",
        "operation timed out",
        "connection closed by",
        "connection reset",
    ):
        if marker in text:
            return HostError(f"host {name}: unreachable ({said}); check that the host is up and that `{hint}` works")
    return HostError(f"host {name}: ssh failed ({said or 'no message'}); check that `{hint}` works")


def check_remote(conn: Connection, code: int, stderr: str) -> None:
    """Raise HostError for an exit that means the link or the remote grpo-tui is broken, not the command."""
    name = conn.host.name
    if code == 255:
        said = " ".join(line.strip() for line in stderr.splitlines() if line.strip())
        raise HostError(
            f"host {name}: the SSH connection failed ({said or 'no message'}); it is retried on the next command"
        )
    if code in (126, 127) and ("not found" in stderr or "No such file" in stderr or "Permission denied" in stderr):
        raise HostError(
            f"host {name}: grpo-tui is not installed there as `{conn.host.command}` ({stderr.strip()}); "
            f"install it on the host (docs/hosts.md) or set its full path as `command:` for {name} in "
            f"{hosts_file()}"
        )


def relay(argv: list[str], data: bytes | None, json_out: bool) -> int:
    """Run ``argv`` (a remote command) with its output copied here through ``safe_text``: a host is not
    trusted, so no control character it sends reaches this terminal (JSON stays the same JSON)."""
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE if data is not None else None, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    copy = clean_json if json_out else clean
    threads = [
        threading.Thread(target=_copy, args=(proc, proc.stdout, sys.stdout, copy), daemon=True),
        threading.Thread(target=_copy, args=(proc, proc.stderr, sys.stderr, clean), daemon=True),
    ]
    for thread in threads:
        thread.start()
    if data is not None and proc.stdin is not None:
        try:
            proc.stdin.write(data)
            proc.stdin.close()
        except BrokenPipeError:
            pass
    code = proc.wait()
    for thread in threads:
        thread.join()
    return code


def _copy(proc: subprocess.Popen, src, dst, convert) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        while chunk := src.read1(1 << 16):
            dst.write(convert(decoder.decode(chunk)))
            dst.flush()
        dst.write(convert(decoder.decode(b"", final=True)))
        dst.flush()
    except BrokenPipeError:  # piped into `head`: the rest is not wanted, and the host must not block on it
        proc.terminate()
