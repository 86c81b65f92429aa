"""One readable line for whatever the MCP SDK raised.

The SDK reports a failed start as ``OSError`` (missing command), an ``ExceptionGroup`` nested
two levels deep around an ``MCPError`` (the server exited or timed out during the handshake) or
around an ``httpx2`` error (nothing listening), and a failed call as a plain ``MCPError``. An
HTTP error status reaches crab only as ``error -32603: Server returned an error response``, so
``http_status_line`` says the status (kept by ``crab_mcp.http_client.HttpWatch``) and, for 401 and
403, which header and which variable to check.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def leaves(exc: BaseException) -> list[BaseException]:
    """The innermost exceptions of (nested) exception groups, in order."""
    if isinstance(exc, BaseExceptionGroup):
        found: list[BaseException] = []
        for inner in exc.exceptions:
            found.extend(leaves(inner))
        return found
    return [exc]


def _line(exc: BaseException) -> str:
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    if isinstance(exc, MCPError):
        if exc.code == CONNECTION_CLOSED:
            return "the server closed the connection (it exited)"
        if exc.code == REQUEST_TIMEOUT:
            return f"it did not answer in time ({exc.message})"
        return f"error {exc.code}: {exc.message}"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc} (check command and PATH)"
    if isinstance(exc, PermissionError):
        return f"command cannot be run: {exc.filename or exc} (not executable)"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def message_too_large(limit: int) -> str:
    """What a server did when one of its messages passed ``max_message``."""
    return f"sent a message over {limit:,} bytes (the limit is [plugins.mcp] max_message)"


def http_status_line(status: int, reason: str, server: str, headers: Mapping[str, str]) -> str:
    """``the server answered HTTP 401 Unauthorized: check the Authorization header …``: the status,
    and for 401/403 the headers (by name, never their values) and variables that carry the key."""
    from crab_mcp.settings import references

    line = f"the server answered HTTP {status}" + (f" {reason}" if reason else "")
    if status not in (401, 403):
        return line
    table = f"[plugins.mcp.servers.{server}]"
    if not headers:
        return f'{line}: it wants a key; add headers = {{ Authorization = "Bearer ${{TOKEN}}" }} to {table}'
    names = ", ".join(headers)
    check = f"check the {names} header{'s' if len(headers) > 1 else ''} in {table}"
    refs = references(headers)
    if refs:
        check += " and the value of " + ", ".join(f"${{{r}}}" for r in refs) + " in your environment"
    if status == 403:
        return f"{line}: the key was refused for this server; {check}"
    return f"{line}: {check}"


def describe_failure(exc: BaseException, log: Path | None = None, http: str = "") -> str:
    """``command not found: x`` / ``the server closed the connection … (see its log: PATH)``;
    ``http`` (an ``http_status_line``) replaces the SDK's stand-in for an HTTP error status."""
    from mcp import MCPError
    from mcp.types import INTERNAL_ERROR

    from crab_mcp.settings import MissingVariable

    found = [e for e in leaves(exc) if not isinstance(e, GeneratorExit)] or [exc]
    first = found[0]
    from crab import ToolError

    if isinstance(first, MissingVariable | ToolError):
        return str(first)  # ToolError: a command wrapper (crab-sandbox's required mode) refused the start
    if http and isinstance(first, MCPError) and first.code == INTERNAL_ERROR:
        return http
    line = _line(first)
    if log is not None and not isinstance(first, FileNotFoundError | PermissionError):
        line += f" (see its log: {log})"
    return line
