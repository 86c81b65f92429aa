"""One readable line for whatever the MCP SDK raised.

The SDK reports a failed start as ``OSError`` (missing command), an ``ExceptionGroup`` nested
two levels deep around an ``MCPError`` (the server exited or timed out during the handshake) or
around an ``httpx2`` error (nothing listening), and a failed call as a plain ``MCPError``.
"""

from __future__ import annotations

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


def describe_failure(exc: BaseException, log: Path | None = None) -> str:
    """``command not found: x`` / ``the server closed the connection … (see its log: PATH)``."""
    from crab_mcp.settings import MissingVariable

    found = [e for e in leaves(exc) if not isinstance(e, GeneratorExit)] or [exc]
    first = found[0]
    if isinstance(first, MissingVariable):
        return str(first)
    line = _line(first)
    if log is not None and not isinstance(first, FileNotFoundError | PermissionError):
        line += f" (see its log: {log})"
    return line
