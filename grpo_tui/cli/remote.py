"""``--host NAME``: a command run on another machine by that machine's own grpo-tui.

The command line the user typed is handed over as it is (without ``--host``), each word quoted for the
remote shell (``executors/ssh_connection.py``), so flags mean there what they mean here and the host
resolves run references and checks paths itself. A ``--config FILE`` here travels on stdin as
``--config -``: the file is this machine's, the paths in it are the host's. What a host answers is checked
where it is parsed (``executors/ssh.py``); rows it sent that break the format are left out, and the one line
that says so is printed on stderr here, once per command and host.
"""

from __future__ import annotations

import codecs
import subprocess
import sys
import threading

from ..executors.hosts import LOCAL, HostError, find_host
from ..executors.ssh import SshExecutor
from ..executors.ssh_connection import check_remote
from ..safe_text import clean, clean_json
from .common import BadInput, interactive

ROOT_OPTIONS = ("--runs-dir", "--theme")


def is_remote(args) -> bool:
    host = getattr(args, "host", None)
    return bool(host) and host != LOCAL


def say_problem(line: str) -> None:
    """A host's rows that were left out: one ``error:`` line on stderr, while the command goes on."""
    print(f"error: {line}", file=sys.stderr, flush=True)


def executor(args, name: str | None = None) -> SshExecutor:
    """The executor of ``--host`` (or ``name``), its runs dir from --runs-dir when given."""
    try:
        host = find_host(name or args.host)
    except HostError as exc:
        raise BadInput(str(exc)) from None
    runs_dir = getattr(args, "runs_dir", None) or getattr(args, "root_runs_dir", None)
    return SshExecutor(host, runs_dir=runs_dir, interactive=interactive(), on_problem=say_problem)


def relay(argv: list[str], data: bytes | None, json_out: bool) -> int:
    """Run ``argv`` with its output copied here through ``safe_text``: a host is not trusted, so no control
    character it sends reaches this terminal (JSON stays the same JSON)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if data is not None else None, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    copy = clean_json if json_out else clean
    threads = [threading.Thread(target=_copy, args=(proc, proc.stdout, sys.stdout, copy), daemon=True),
               threading.Thread(target=_copy, args=(proc, proc.stderr, sys.stderr, clean), daemon=True)]
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


def sub_argv(argv: list[str], command: str) -> list[str]:
    """The words after the command name, without ``--host``/``--all-hosts`` (this side's business)."""
    i = 0
    while i < len(argv) and argv[i] != command:
        i += 2 if argv[i] in ROOT_OPTIONS else 1
    rest, out, j = argv[i + 1:], [], 0
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
    return [args.command, *words], data


def forward(args) -> int:
    """Run the command on the host with this terminal's output; its exit code is ours."""
    ex = executor(args)
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
