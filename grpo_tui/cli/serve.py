"""``grpo-tui serve``: the app in a web browser, for a teammate without a terminal or a phone on the VPN.

textual-serve starts the ordinary app (``python -m grpo_tui --runs-dir DIR``) once per browser tab, from one
command string that ``/bin/sh`` reads, so every argument is quoted (``served_command``). The served app is
read-only (``services/serving/web_mode.py``) unless ``--allow-control``. The server listens on 127.0.0.1 unless
``--host`` names another address and ``--expose`` says so on purpose, and every page and websocket needs the
token printed with the URL (``services/serving/web_server.py``). docs/serve.md shows the ``ssh -L`` way in.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from grpo_tui.services.serving.web_mode import READ_ONLY_ENV
from trainer_core.contract.run.folder import resolve_runs_dir

from .common import BadInput, add_runs_dir, add_theme

DEFAULT_PORT = 8000
LOOPBACK = "127.0.0.1"


def register(sub) -> None:
    parser = sub.add_parser(
        "serve",
        help="serve the app to a web browser (read-only unless --allow-control)",
        description="Serve the app to a web browser through textual-serve: each tab runs its own app. The page "
        "needs the token printed with its URL. From a laptop: ssh -L 8000:127.0.0.1:8000 BOX, then open the "
        "printed URL (docs/serve.md).",
    )
    add_runs_dir(parser)
    add_theme(parser)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    parser.add_argument(
        "--host",
        default=LOOPBACK,
        metavar="ADDRESS",
        help=f"address to listen on (default {LOOPBACK}: this machine only, reached from elsewhere through "
        "ssh -L); any other address, such as 0.0.0.0, needs --expose",
    )
    parser.add_argument(
        "--expose",
        action="store_true",
        help="listen on the non-loopback --host: anyone who can reach the port and has the token can watch",
    )
    parser.add_argument(
        "--allow-control",
        action="store_true",
        help="let the browser launch, stop, resume and extend runs (default: it can only watch)",
    )
    parser.set_defaults(handler=run)


def served_command(runs_dir: Path, theme: str | None, program: list[str] | None = None) -> str:
    """The shell command textual-serve runs for each browser: the app on ``runs_dir``, every word quoted.
    ``program``: what starts the app (default: this interpreter's ``-m grpo_tui``)."""
    words = [*(program or [sys.executable, "-m", "grpo_tui"]), "--runs-dir", str(runs_dir)]
    if theme:
        words += ["--theme", theme]
    return "exec " + shlex.join(words)


def check_address(host: str, port: int, expose: bool) -> None:
    """BadInput unless the port is one and a non-loopback address comes with --expose."""
    from grpo_tui.services.serving.web_server import is_loopback

    if not 1 <= port <= 65535:
        raise BadInput(f"--port {port} is not a port: give one from 1 to 65535 (default {DEFAULT_PORT}).")
    if not is_loopback(host) and not expose:
        raise BadInput(
            f"--host {host} would let other machines reach the app: add --expose to mean it (the page then "
            f"needs the printed token), or keep the default --host {LOOPBACK} and reach it through "
            f"ssh -L {port}:{LOOPBACK}:{port} from your machine."
        )


def run(args) -> int:
    from grpo_tui.services.serving.web_server import TokenServer, new_token

    check_address(args.host, args.port, args.expose)
    runs_dir = resolve_runs_dir(args.runs_dir or getattr(args, "root_runs_dir", None)).resolve()
    theme = args.theme or getattr(args, "root_theme", None)
    if args.allow_control:
        os.environ.pop(READ_ONLY_ENV, None)
    else:
        os.environ[READ_ONLY_ENV] = "1"  # each app textual-serve starts inherits it (services/serving/web_mode.py)
    mode = (
        "control allowed: the browser can launch, stop, resume and extend runs"
        if args.allow_control
        else "read-only: the browser can watch runs, not launch, stop or resume them (--allow-control to allow)"
    )

    def announce(url: str) -> None:
        print(f"grpo-tui serve: runs in {runs_dir}\n{mode}\nopen {url}\nstop with Ctrl+C", flush=True)

    server = TokenServer(
        served_command(runs_dir, theme), host=args.host, port=args.port, token=new_token(), announce=announce
    )
    try:
        server.serve()
    except OSError as exc:
        raise BadInput(f"cannot listen on {args.host} port {args.port}: {exc.strerror or exc}") from None
    return 0
