"""JSON-RPC 2.0 over a language server's stdin and stdout, framed by LSP's ``Content-Length``
headers: ``Framer`` (sans-IO: bytes in, messages out) and ``Connection`` (requests with their
answers, notifications, and the server's own requests, each answered).

A frame larger than ``MAX_FRAME`` or a header that is not LSP's ends the connection: a server
that sends it is broken, and the caller restarts it rather than reading on.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

MAX_FRAME = 64 * 1024 * 1024
"""Bytes of one message; a bigger one is a broken server (a whole project's symbols fit)."""


class ProtocolError(Exception):
    """The server broke LSP's framing or JSON-RPC."""


class RequestFailed(Exception):
    """The server answered a request with an error."""

    def __init__(self, method: str, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else None
        super().__init__(f"{method}: {message or error}")


class ConnectionLost(Exception):
    """The server's output ended (it exited) before an answer came."""


class Framer:
    """Splits LSP frames out of a byte stream; ``encode`` makes one."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    @staticmethod
    def encode(message: dict[str, Any]) -> bytes:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body

    def feed(self, data: bytes) -> list[Any]:
        """The whole messages ``data`` completes (their JSON decoded); raises ``ProtocolError``."""
        self._buffer += data
        messages: list[Any] = []
        while True:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > 8192:
                    raise ProtocolError("a header without an end")
                return messages
            length = None
            for line in bytes(self._buffer[:end]).split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    try:
                        length = int(value.strip())
                    except ValueError:
                        raise ProtocolError(f"Content-Length {value.strip()!r}") from None
            if length is None or not 0 <= length <= MAX_FRAME:
                raise ProtocolError(f"no usable Content-Length (got {length})")
            if len(self._buffer) < end + 4 + length:
                return messages
            body = bytes(self._buffer[end + 4 : end + 4 + length])
            del self._buffer[: end + 4 + length]
            try:
                messages.append(json.loads(body))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ProtocolError(f"a message that is not JSON ({exc})") from None


Handler = Callable[[str, Any], Awaitable[Any] | Any]


class Connection:
    """One JSON-RPC connection: ``request`` and ``notify`` out; notifications and the server's
    requests go to ``on_notification`` and ``on_request`` (whose return value is the answer; one
    that raises answers ``MethodNotFound``)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        on_notification: Callable[[str, Any], None],
        on_request: Callable[[str, Any], Any],
        on_close: Callable[[], None] = lambda: None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._on_notification = on_notification
        self._on_request = on_request
        self._on_close = on_close
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._lock = asyncio.Lock()
        self.closed: str | None = None
        """Why the connection ended (None while it is open)."""
        self._task = asyncio.get_running_loop().create_task(self._read())

    async def _send(self, message: dict[str, Any]) -> None:
        if self.closed is not None:
            raise ConnectionLost(self.closed)
        async with self._lock:
            try:
                self._writer.write(Framer.encode({"jsonrpc": "2.0", **message}))
                await self._writer.drain()
            except (ConnectionError, RuntimeError) as exc:
                raise ConnectionLost(f"cannot write to the server: {exc}") from None

    async def request(self, method: str, params: Any) -> Any:
        """The server's answer to ``method``; raises ``RequestFailed`` or ``ConnectionLost``
        (bound it with ``asyncio.wait_for``: a request the server never answers waits)."""
        number = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[number] = (method, future)
        try:
            await self._send({"id": number, "method": method, "params": params})
            return await future
        finally:
            self._pending.pop(number, None)

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"method": method, "params": params})

    async def _read(self) -> None:
        framer = Framer()
        why = "the server's output ended"
        try:
            while chunk := await self._reader.read(65536):
                for message in framer.feed(chunk):
                    await self._dispatch(message)
        except ProtocolError as exc:
            why = f"the server broke the protocol: {exc}"
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            why = f"the server's output failed: {exc}"
        finally:
            self._close(why)

    def _close(self, why: str) -> None:
        if self.closed is None:
            self.closed = why
        for _, future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionLost(why))
        with contextlib.suppress(Exception):
            self._on_close()

    async def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if "method" not in message:
            entry = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if entry is None or entry[1].done():
                return
            method, future = entry
            if "error" in message:
                future.set_exception(RequestFailed(method, message["error"]))
            else:
                future.set_result(message.get("result"))
            return
        method = str(message["method"])
        if "id" not in message:
            with contextlib.suppress(Exception):  # a notification we cannot read changes nothing
                self._on_notification(method, message.get("params"))
            return
        try:
            answer: dict[str, Any] = {"id": message["id"], "result": self._on_request(method, message.get("params"))}
        except Exception:
            answer = {"id": message["id"], "error": {"code": -32601, "message": f"crab does not offer {method}"}}
        with contextlib.suppress(ConnectionLost):
            await self._send(answer)

    async def close(self) -> None:
        self._close("closed by crab")
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
