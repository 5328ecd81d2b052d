"""Streamable HTTP for ``grpo-tui mcp --http``: 127.0.0.1 only, and a bearer token on every request.

Anyone on the machine can reach a port on 127.0.0.1, and the server reads every run and may stop them, so each
request must carry ``Authorization: Bearer TOKEN``: the token the user set (``--token`` or ``$GRPO_TUI_MCP_TOKEN``)
or one generated at start and printed on stderr. A request without it gets 401 before the SDK sees it; the
token is compared in constant time.
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
import sys
from typing import Any

HOST = "127.0.0.1"
DEFAULT_PORT = 8765
TOKEN_ENV = "GRPO_TUI_MCP_TOKEN"
PATH = "/mcp"


def pick_token(given: str | None) -> tuple[str, str | None]:
    """The token to require, and where the user set it (None: generated here, and then printed)."""
    if given:
        return given, "--token"
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV], f"${TOKEN_ENV}"
    return secrets.token_urlsafe(32), None


class BearerGuard:
    """An ASGI wrapper that answers 401 to any HTTP request without the bearer token."""

    def __init__(self, app: Any, token: str):
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
                return
        await self.app(scope, receive, send)


def serve_http(server: Any, port: int, token: str, set_by: str | None) -> None:
    """Serve ``server`` (an ``MCPServer``) on 127.0.0.1:``port`` until interrupted; the banner on stderr comes once
    the port is bound, so a client that reads it can connect."""
    import uvicorn

    app = BearerGuard(server.streamable_http_app(host=HOST), token)
    config = uvicorn.Config(app, host=HOST, port=port, log_level="warning", lifespan="on")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {HOST}:{port} ({exc.strerror}): pick another port with --http PORT") from None
    shown = token if set_by is None else f"the one set by {set_by}"
    print(
        f"grpo-tui mcp: serving streamable HTTP on http://{HOST}:{port}{PATH}; "
        f"send 'Authorization: Bearer TOKEN' with token {shown}",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.Server(config).run(sockets=[sock])
