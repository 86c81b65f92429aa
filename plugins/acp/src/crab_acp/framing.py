"""The lines the editor sends, checked before the SDK reads them: JSON-RPC 2.0 objects only.

The SDK skips a line that is not JSON without a word, and a line that is JSON but not an object
(``[1]``, ``42``) ends its receive loop, and with it the connection. Here every such line gets
the JSON-RPC answer (``-32700`` parse error, ``-32600`` invalid request, ``id`` null or the
message's own) and is dropped; the rest reaches the SDK unchanged, in order. A line longer than
``LINE_LIMIT`` is dropped the same way, without reading it into memory whole.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

LINE_LIMIT = 50 * 1024 * 1024
"""The longest message accepted (the SDK's own default: embedded images and files are large)."""

log = logging.getLogger("crab_acp")


def problem(line: bytes) -> tuple[Any, int, str] | None:
    """``(id, code, message)`` of the JSON-RPC error ``line`` deserves, or None when it may pass."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None, -32700, "Parse error: the line is not JSON"
    if not isinstance(message, dict):
        return None, -32600, "Invalid Request: a message must be a JSON object"
    ident = message.get("id")
    if not isinstance(ident, str | int | type(None)) or isinstance(ident, bool):
        return None, -32600, "Invalid Request: id must be a string, a number or null"
    if message.get("jsonrpc") != "2.0":
        return ident, -32600, 'Invalid Request: "jsonrpc" must be "2.0"'
    if "method" in message:
        if not isinstance(message["method"], str):
            return ident, -32600, "Invalid Request: method must be a string"
        if "params" in message and not isinstance(message["params"], dict | list | type(None)):
            return ident, -32600, "Invalid Request: params must be an object"
        return None
    if "id" not in message or not ("result" in message or "error" in message):
        return ident, -32600, "Invalid Request: neither a request, a notification nor a response"
    return None


def _answer(writer: asyncio.StreamWriter, ident: Any, code: int, message: str) -> None:
    payload = {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
    writer.write((json.dumps(payload, separators=(",", ":")) + "\n").encode())


async def _line(raw: asyncio.StreamReader) -> tuple[bytes, bool]:
    """The next line (without reading an overlong one whole) and whether it was too long."""
    try:
        return await raw.readuntil(b"\n"), False
    except asyncio.IncompleteReadError as exc:
        return exc.partial, False
    except asyncio.LimitOverrunError:
        while True:  # drop the rest of the overlong line
            try:
                await raw.readuntil(b"\n")
                return b"", True
            except asyncio.LimitOverrunError as exc:
                await raw.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return b"", True


async def _pump(raw: asyncio.StreamReader, out: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            line, too_long = await _line(raw)
            if too_long:
                log.warning("dropped a message longer than %d bytes", LINE_LIMIT)
                _answer(writer, None, -32600, f"Invalid Request: a message may have at most {LINE_LIMIT} bytes")
                continue
            if not line:
                return
            if not line.strip():
                continue
            found = problem(line)
            if found is None:
                out.feed_data(line if line.endswith(b"\n") else line + b"\n")
            else:
                log.warning("answered a malformed message: %s", found[2])
                _answer(writer, *found)
    finally:
        out.feed_eof()


def filtered_reader(
    raw: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> tuple[asyncio.StreamReader, asyncio.Task[None]]:
    """A reader holding only the lines of ``raw`` that may pass, fed by the returned task."""
    out = asyncio.StreamReader(limit=LINE_LIMIT)
    return out, asyncio.get_running_loop().create_task(_pump(raw, out, writer))
