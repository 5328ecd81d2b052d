"""``--host NAME``: a command run on another machine by that machine's own grpo-tui.

The command line the user typed is handed over as it is (without ``--host``), each word quoted for the
remote shell (``executors/ssh_connection.py``), so flags mean there what they mean here and the host
resolves run references and checks paths itself. A ``--config FILE`` here travels on stdin as
``--config -``: the file is this machine's, the paths in it are the host's. What a host answers is checked
where it is parsed (``executors/ssh.py``); rows it sent that break the format are left out, and the one line
that says so is printed on stderr here, once per command and host.

Commands that do more than hand the words over (``runs``, ``watch``, ``stop``, ``logs`` and resuming here) take
the executor of ``--host`` from ``executors(args)``, the registry (this machine's without ``--host``), and call
it as the app does: ``find`` is a run by its reference, through that executor.
"""

from __future__ import annotations

import socket
import subprocess
import sys

from grpo_tui.services.records.run_row import RunInfo

from ..executors.base import Executor, ExecutorError
from ..executors.hosts import LOCAL, HostError
from ..executors.registry import ExecutorRegistry
from ..executors.ssh import SshExecutor
from ..executors.ssh_connection import check_remote, relay
from .common import BadInput, interactive

ROOT_OPTIONS = ("--runs-dir", "--theme")


def is_remote(args) -> bool:
    host = getattr(args, "host", None)
    return bool(host) and host != LOCAL


def say_problem(line: str) -> None:
    """A host's rows that were left out: one ``error:`` line on stderr, while the command goes on."""
    print(f"error: {line}", file=sys.stderr, flush=True)


def executors(args) -> ExecutorRegistry:
    """The executors of this command: this machine's runs dir is --runs-dir, a host's is --runs-dir given with
    ``--host`` (or before the command); ssh may prompt on a terminal; rows a host left out are said on stderr."""
    host_runs_dir = getattr(args, "runs_dir", None) or getattr(args, "root_runs_dir", None)
    return ExecutorRegistry(
        getattr(args, "runs_dir", None), host_runs_dir=host_runs_dir, interactive=interactive(), on_problem=say_problem
    )


def executor(args, name: str | None = None) -> Executor:
    """The executor of ``--host`` (or ``name``; without either, this machine's)."""
    try:
        return executors(args).get(name or getattr(args, "host", None))
    except HostError as exc:
        raise BadInput(str(exc)) from None


def find(args, ref: str | None = None) -> RunInfo:
    """The run ``ref`` (default: the command's RUN) names on this machine, found by its executor; BadInput, in the
    catalog's words, when it names none or several."""
    try:
        return executors(args).local.find(args.run if ref is None else ref)
    except ExecutorError as exc:
        raise BadInput(str(exc)) from None


def ssh_executor(args) -> SshExecutor:
    """The executor of ``--host`` for a command handed to the host's own grpo-tui as it was typed."""
    ex = executor(args)
    if not isinstance(ex, SshExecutor):
        raise BadInput(
            f"--host {args.host}: `grpo-tui {args.command}` is handed to a host's own grpo-tui over SSH, "
            f"and {ex.where} is not reached that way"
        )
    return ex


def sub_argv(argv: list[str], command: str) -> list[str]:
    """The words after the command name, without ``--host``/``--all-hosts`` (this side's business)."""
    i = 0
    while i < len(argv) and argv[i] != command:
        i += 2 if argv[i] in ROOT_OPTIONS else 1
    rest, out, j = argv[i + 1 :], [], 0
    while j < len(rest):
        word = rest[j]
        if word == "--":
            out += rest[j:]
            break
        if word == "--host":
            j += 2
            continue
        if not (word.startswith("--host=") or word == "--all-hosts"):
            out.append(word)
        j += 1
    return out


def config_on_stdin(words: list[str]) -> tuple[list[str], bytes | None]:
    """``--config FILE`` replaced by ``--config -``, and the file's bytes to send."""
    out, data, j = [], None, 0
    while j < len(words):
        word = words[j]
        path = None
        if word == "--config" and j + 1 < len(words):
            path, j = words[j + 1], j + 2
        elif word.startswith("--config="):
            path, j = word.split("=", 1)[1], j + 1
        else:
            out.append(word)
            j += 1
            continue
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError as exc:
                raise BadInput(f"--config {path}: cannot read it here: {exc.strerror}") from None
        out += ["--config", "-"]
    return out, data


def remote_words(args, ex: SshExecutor) -> tuple[list[str], bytes | None]:
    words = sub_argv(args.argv, args.command)
    words, data = config_on_stdin(words)
    if "--runs-dir" not in words and not any(w.startswith("--runs-dir=") for w in words):
        words += ex.runs_args()
    if args.command == "stop" and not any(w == "--by" or w.startswith("--by=") for w in words):
        words.append(f"--by={args.by} on {socket.gethostname()}")  # who asked: this machine's CLI (cleaned there)
    return [args.command, *words], data


def forward(args) -> int:
    """Run the command on the host with this terminal's output; its exit code is ours."""
    ex = ssh_executor(args)
    try:
        ex.info()
        words, data = remote_words(args, ex)
        argv = ex.conn.command_argv(words)
        if "--raw" in words:  # `logs --raw`: the documented pass-through of the log's bytes
            code = subprocess.run(argv, input=data).returncode
        else:
            code = relay(argv, data, json_out=words[0] == "events" or "--json" in words)
        check_remote(ex.conn, code, "not found" if code == 127 else "")
    except HostError as exc:
        raise BadInput(str(exc)) from None
    return code
