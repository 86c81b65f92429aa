"""Incremental Server-Sent Events decoder: bytes in, complete events out, no IO.

Follows the WHATWG ``text/event-stream`` rules (CRLF, CR or LF line ends, ``:`` comments,
multi-line ``data``, ``event``/``id``/``retry`` fields). Chunk boundaries may fall anywhere,
including inside a UTF-8 sequence or between the CR and LF of one line end.
"""

from __future__ import annotations

from dataclasses import dataclass

_BOM = "\ufeff"
_IGNORED_CHARS = 300


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event. ``event`` is ``"message"`` when the stream named none."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Feed it bytes as they arrive; it returns the events completed by each chunk.

    Lines the rules ignore (an unknown field such as llama.cpp's ``error: {...}``, text that is no
    field at all) are kept in ``_ignored``, the first 300 characters of them: where a failing
    server puts its own words, for ``crab.http_stream`` to quote.
    """

    __slots__ = ("_buffer", "_data", "_event", "_id", "_ignored", "_retry", "_started")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._started = False
        self._ignored: list[str] = []

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Add ``chunk`` and return every event it completed, in order."""
        buffer = self._buffer + chunk if self._buffer else chunk
        held = b""
        if b"\r" in buffer:
            # A CR at the very end may be the first half of a CRLF split across chunks.
            if buffer.endswith(b"\r"):
                buffer, held = buffer[:-1], b"\r"
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = buffer.rfind(b"\n")
        if end < 0:
            self._buffer = buffer + held
            return []
        self._buffer = buffer[end + 1 :] + held
        # Splitting on LF never cuts a UTF-8 sequence, so complete lines decode on their own.
        text = buffer[:end].decode("utf-8", errors="replace")
        if not self._started:
            self._started = True
            if text.startswith(_BOM):
                text = text[1:]
        return self._lines(text.split("\n"))

    def flush(self) -> list[ServerSentEvent]:
        """End of stream: dispatch an event whose lines all arrived but whose blank line did not.

        A final line cut off before its line end is discarded (it may be half a JSON document).
        Servers that close right after the last ``data:`` line are common enough to accept.
        """
        tail = self._buffer
        self._buffer = b""
        events: list[ServerSentEvent] = []
        if tail == b"\r":
            events = self._lines([""])
        if self._data:
            events.extend(self._lines([""]))
        return events

    def _lines(self, lines: list[str]) -> list[ServerSentEvent]:
        events: list[ServerSentEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append(ServerSentEvent("\n".join(data), self._event or "message", self._id, self._retry))
                    data.clear()
                self._event = ""
                continue
            # ``data:`` is by far the most common line; handle it before the general case.
            if line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(" ") else value)
                continue
            if line[0] == ":":
                continue
            name, colon, value = line.partition(":")
            if colon and value.startswith(" "):
                value = value[1:]
            if name == "event":
                self._event = value
            elif name == "data":
                data.append(value)
            elif name == "id":
                if "\0" not in value:
                    self._id = value
            elif name == "retry" and value.isdigit():
                self._retry = int(value)
            elif name != "retry" and sum(map(len, self._ignored)) < _IGNORED_CHARS:
                self._ignored.append(line[:_IGNORED_CHARS])
        return events
