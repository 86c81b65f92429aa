"""The HTTP client of one streamable-HTTP server: headers, timeouts, a bound on each body, and
what crab saw of the server's error answers.

The SDK turns a 401 into ``error -32603: Server returned an error response``; ``HttpWatch``
keeps the status of the last error answer so crab can say ``HTTP 401`` and which header to check
(``crab_mcp.errors.http_status_line``). A JSON body, or one server-sent event, longer than
``max_message`` bytes is cut off with ``MessageTooLarge`` (an ``httpx2.StreamError``, which the SDK
answers as that request's error instead of reading on), and ``HttpWatch.oversized`` says so, so
the link can name the cause and drop the connection.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2


class MessageTooLarge(httpx2.StreamError):
    """A response body went past the configured ``max_message``."""


@dataclass
class HttpWatch:
    """What the responses of one connection said: the last error status, an oversized body."""

    status: int = 0
    reason: str = ""
    oversized: bool = False

    async def saw(self, response: httpx2.Response, max_message: int) -> None:
        if response.status_code >= 400:
            self.status, self.reason = response.status_code, response.reason_phrase or ""
        events = response.headers.get("content-type", "").lower().startswith("text/event-stream")
        response.stream = _Bounded(response.stream, max_message, self, events)


_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


class _Bounded(httpx2.AsyncByteStream):
    """A response body that raises ``MessageTooLarge`` once the body (or, for an event stream,
    the event being read) passes ``limit`` bytes."""

    def __init__(self, inner: Any, limit: int, watch: HttpWatch, events: bool) -> None:
        self._inner, self._limit, self._watch, self._events = inner, limit, watch, events

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        tail = b""  # an event's end may be split across two chunks
        async for chunk in self._inner:
            if self._events:
                window = tail + chunk
                ends = [m.end() for m in _EVENT_END.finditer(window)]
                seen = len(window) - ends[-1] if ends else seen + len(chunk)
                tail = window[-3:]
            else:
                seen += len(chunk)
            if seen > self._limit:
                self._watch.oversized = True
                raise MessageTooLarge(f"the server sent a message over {self._limit:,} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def http_client(
    headers: Mapping[str, str], connect_timeout: float, call_timeout: float, max_message: int, watch: HttpWatch
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for one server (enter it; the SDK's transport uses it)."""

    async def saw(response: httpx2.Response) -> None:
        await watch.saw(response, max_message)

    timeout = httpx2.Timeout(connect_timeout, read=max(300.0, call_timeout))
    return httpx2.AsyncClient(headers=dict(headers), timeout=timeout, event_hooks={"response": [saw]})
