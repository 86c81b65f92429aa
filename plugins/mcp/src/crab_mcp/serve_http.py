"""``crab mcp serve --http``: the same MCP server over streamable HTTP, on 127.0.0.1, behind a
bearer token.

The token is ``$CRAB_HOME/mcp/serve.token`` (made once, 32 random bytes, mode 0600): a client sends
``Authorization: Bearer <token>``; any request without it gets 401 before the MCP app sees it
(compared in constant time). The token is never printed or logged: crab prints where the file
is. The listener binds 127.0.0.1 (the SDK's DNS-rebinding guard then also checks ``Host`` and
``Origin``); uvicorn's access log is off, and its own log goes to stderr at warning level.
"""

from __future__ import annotations

import hmac
import os
import secrets
import sys
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"


def token_path() -> Path:
    from crab.config import crab_home

    return crab_home() / "mcp" / "serve.token"


def load_token(path: Path | None = None) -> str:
    """The serving token, made (0600, in a 0700 folder) the first time."""
    path = path or token_path()
    if path.exists():
        token = path.read_text(encoding="utf-8").strip()
        if token:
            return token
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
    return token


def guarded(app: Any, token: str) -> Any:
    """``app`` behind ``Authorization: Bearer <token>`` (401 otherwise)."""
    expected = f"Bearer {token}".encode()

    async def guard(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            sent = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(sent, expected):
                body = b"crab mcp serve: send Authorization: Bearer <the token in $CRAB_HOME/mcp/serve.token>\n"
                await send(
                    {"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]}
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guard


def serve_http(server: Any, port: int, token: str) -> None:
    """Serve ``server`` (a lowlevel MCP ``Server``) until Ctrl-C."""
    import uvicorn

    app = guarded(server.streamable_http_app(host=HOST), token)
    print(
        f"crab mcp serve: listening on http://{HOST}:{port}/mcp (bearer token in {token_path()})",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(app, host=HOST, port=port, log_level="warning", access_log=False, lifespan="on")
