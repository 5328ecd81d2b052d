"""textual-serve's web server, with a token in front of the app: what ``grpo-tui serve`` runs.

textual-serve (1.1.3) starts one app process per websocket on ``/ws``, for anyone who can reach the port;
on a shared GPU box or a Slurm login node that is every user of the machine, even on 127.0.0.1. So every
request but the package's static files needs the token printed at start: on the page's URL (``?token=``)
the first time, then from a cookie that page sets (HttpOnly, SameSite=Strict), which the page's websocket
carries. A websocket opened from another origin is refused too. The page's own URLs (the websocket's, the
static files') are built from the request's Host, not from the bind address, so they work through
``ssh -L`` on any local port and from another machine when the server listens on 0.0.0.0.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import secrets
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import aiohttp_jinja2
import psutil
from aiohttp import web
from textual_serve.server import Server, to_int

TITLE = "grpo-tui"
SHUTDOWN_SECONDS = 5.0  # a connected browser holds its websocket open: a stop waits this long for it

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    return secrets.token_urlsafe(24)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) binds only to this machine: 127.0.0.0/8, ::1 or localhost."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def page_url(host: str, port: int, token: str) -> str:
    """The URL to open: the bind address, or this machine's name when it listens on every address."""
    if host in ("0.0.0.0", "::", ""):
        host = socket.getfqdn()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/?token={token}"


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def end_processes(processes: list[psutil.Process], timeout: float) -> None:
    """Give ``processes`` ``timeout`` seconds to exit, then TERM, then KILL what is left. Only the server's own
    children, the apps: a run launched from a browser (--allow-control) is an app's child and outlives it.
    Never reaps them (asyncio's child watcher does)."""

    def left_after(seconds: float) -> list[psutil.Process]:
        deadline = time.monotonic() + seconds
        while any(_running(p) for p in processes) and time.monotonic() < deadline:
            time.sleep(0.05)
        return [p for p in processes if _running(p)]

    for process in left_after(timeout):
        with contextlib.suppress(psutil.Error):
            process.terminate()
    for process in left_after(3.0):
        with contextlib.suppress(psutil.Error):
            process.kill()


class TokenServer(Server):
    """textual-serve's ``Server`` serving ``command``, with the token check, request-relative page URLs and our
    own start line (the URL, once the port is bound)."""

    def __init__(self, command: str, *, host: str, port: int, token: str, announce: Callable[[str], None]):
        super().__init__(command, host=host, port=port, title=TITLE)
        self.token = token
        self.announce = announce
        self.cookie = f"grpo_tui_serve_{port}"  # cookies ignore the port: two servers on one host keep theirs

    def authorised(self, request: web.Request) -> bool:
        given = request.query.get("token") or request.cookies.get(self.cookie) or ""
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())

    @web.middleware
    async def check(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith("/static/"):
            return await handler(request)  # the package's scripts and styles, the same for everyone
        if not self.authorised(request):
            raise web.HTTPForbidden(
                text="grpo-tui serve: this page needs its token. Open the URL the server printed when it "
                "started (it ends in ?token=...).\n"
            )
        origin = request.headers.get("Origin")
        if request.path == "/ws" and origin is not None and urlsplit(origin).netloc != request.host:
            raise web.HTTPForbidden(text="grpo-tui serve: a websocket from another site is refused.\n")
        return await handler(request)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self.check)
        app.on_cleanup.append(self.end_apps)
        return app

    async def end_apps(self, _app: web.Application) -> None:
        """After the websockets closed (each sent its app a quit): wait for the apps, while the loop that
        reaps them still runs."""
        await asyncio.to_thread(end_processes, psutil.Process().children(), SHUTDOWN_SECONDS)

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """textual-serve's page, with the websocket and static URLs of the host the browser asked for."""
        base = f"{request.scheme}://{request.host}"
        static = request.app.router["static"].url_for(filename="/")
        socket_url = ("wss" if request.scheme == "https" else "ws") + f"://{request.host}/ws"
        context: dict[str, Any] = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": socket_url,
            "config": {"static": {"url": f"{base}{static}".rstrip("/") + "/"}},
            "application": {"name": self.title},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict", path="/")
        response.headers["Referrer-Policy"] = "no-referrer"  # the URL holds the token
        response.headers["Cache-Control"] = "no-store"
        return response

    async def on_startup(self, app: web.Application) -> None:
        """No banner here: the URL is announced once the port is bound (``serve``)."""

    def serve(self, debug: bool = False) -> None:
        """Serve until SIGINT or SIGTERM; an address that cannot be bound raises OSError before anything is
        announced."""
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self.request_exit)
        web.run_app(
            self._make_app(),
            host=self.host,
            port=self.port,
            handle_signals=False,
            loop=loop,
            shutdown_timeout=SHUTDOWN_SECONDS,
            access_log=None,  # its lines would hold the token
            print=lambda _message: self.announce(page_url(self.host, self.port, self.token)),
        )
