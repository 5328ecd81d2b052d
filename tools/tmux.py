"""A private tmux server running one command in a terminal of a fixed size: read its screen, type into it, end it.

The end-to-end tests drive the app through it as a person would, and the benchmarks time and meter the app in it.
Each server has its own socket (``tmux -L``) and no tmux.conf, so it neither sees nor touches the user's tmux. The
pane is an xterm-256color terminal with truecolor. It stays after its command ends (remain-on-exit), so a crash can
be read off it, and the shell writes the command's exit code to a file: tmux's ``pane_dead_status`` is set only once
tmux reaps the child, which tmux 3.3 sometimes misses.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psutil

TIMEOUT = 120.0  # generous: a busy 2-core machine trains, imports and draws slowly


class ScreenTimeout(AssertionError):
    """The pane did not show what was waited for in time, or its command ended first."""


class Tmux:
    def __init__(
        self, env: dict[str, str] | None = None, width: int = 100, height: int = 30, session: str = "grpo-tui"
    ):
        self.socket = f"grpo-tui-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.session, self.width, self.height = session, width, height
        # COLUMNS and LINES (pytest-xdist sets 80x24 in its workers) would override the pane's size for the app
        base = {k: v for k, v in (os.environ if env is None else env).items() if k not in ("COLUMNS", "LINES")}
        self.env = {**base, "TERM": "xterm-256color", "COLORTERM": "truecolor"}
        self.scratch = Path(tempfile.mkdtemp(prefix="grpo-tui-tmux-"))
        self.status_file = self.scratch / "exit-status"
        self.socket_path: str | None = None
        self._command: psutil.Process | None = None

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        # -u: UTF-8 whatever the locale; -f /dev/null: none of the user's tmux.conf
        return subprocess.run(
            ["tmux", "-u", "-f", "/dev/null", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            env=self.env,
            check=check,
            timeout=30,
        )

    def start(self, argv: list[str], cwd: Path, clipboard: bool = False) -> None:
        """Run ``argv`` in the pane, in ``cwd``. ``clipboard``: tmux takes OSC 52 from the pane into a paste
        buffer (``buffers()``), so a test can prove that none reached the terminal."""
        line = shlex.join(
            [
                "env",
                "-u",
                "COLUMNS",
                "-u",
                "LINES",
                "TERM=xterm-256color",
                "COLORTERM=truecolor",
                "PYTHONUNBUFFERED=1",
                *argv,
            ]
        )
        line += f"; echo $? > {shlex.quote(str(self.status_file))}"
        first = ["start-server", ";", "set-option", "-g", "set-clipboard", "on", ";"] if clipboard else []
        self.tmux(
            *first,
            "new-session",
            "-d",
            "-s",
            self.session,
            "-x",
            str(self.width),
            "-y",
            str(self.height),
            "-c",
            str(cwd),
            line,
            ";",
            "set-option",
            "-t",
            self.session,
            "remain-on-exit",
            "on",
        )
        self.socket_path = self.pane("#{socket_path}")

    def screen(self, colours: bool = False) -> str:
        return self.tmux("capture-pane", "-p", *(["-e"] if colours else []), "-t", self.session).stdout

    def buffers(self) -> str:
        """tmux's paste buffers: where an OSC 52 sequence that reached the terminal would have landed."""
        return self.tmux("list-buffers").stdout

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.session, *keys)

    def pane(self, fmt: str) -> str:
        return self.tmux("display-message", "-p", "-t", self.session, fmt).stdout.strip()

    def server_pid(self) -> int:
        return int(self.pane("#{pid}"))

    def command(self, timeout: float = 10.0) -> psutil.Process:
        """The command's process: the pane's shell runs it as its child (to write its exit code after it)."""
        if self._command is None:
            shell = psutil.Process(int(self.pane("#{pane_pid}")))
            deadline = time.monotonic() + timeout
            while not (children := shell.children()):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the pane's shell started no command within {timeout:.0f}s")
                time.sleep(0.01)
            self._command = children[0]
        return self._command

    def exited(self) -> bool:
        return self.pane("#{pane_dead}") == "1"

    def exit_code(self) -> int | None:
        """The command's exit code once it has ended, else None."""
        text = self.status_file.read_text().strip() if self.status_file.exists() else ""
        return int(text) if text else None

    def wait_screen(
        self,
        predicate: Callable[[str], object],
        timeout: float = TIMEOUT,
        what: str = "the expected text",
        every: float = 0.25,
    ) -> str:
        """Poll the pane every ``every`` s until ``predicate(text)`` holds; fail with the last screen shown."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            if self.exit_code() is not None:
                break
            time.sleep(every)
        raise ScreenTimeout(f"the pane did not show {what} within {timeout:.0f}s; it shows:\n{text}")

    def wait_exit(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.exit_code()
            if code is not None:
                return code
            time.sleep(0.2)
        raise AssertionError(f"the command did not exit within {timeout:.0f}s; the pane shows:\n{self.screen()}")

    def kill(self) -> None:
        """End the server; a command still running gets its hangup, and is killed if it has not ended 5 s later."""
        command = self._running_command()
        self.tmux("kill-server", check=False)
        if self.socket_path:  # tmux leaves the socket file behind
            Path(self.socket_path).unlink(missing_ok=True)
        shutil.rmtree(self.scratch, ignore_errors=True)
        if command is not None:
            _, alive = psutil.wait_procs([command], timeout=5)
            for process in alive:
                try:
                    process.kill()
                except psutil.NoSuchProcess:
                    pass

    def _running_command(self) -> psutil.Process | None:
        if self.socket_path is None or self.exit_code() is not None:
            return None
        try:
            return None if self.exited() else self.command(timeout=0)
        except (subprocess.SubprocessError, psutil.Error, RuntimeError, ValueError):
            return None
