"""Incremental Server-Sent Events decoder: bytes in, complete events out, no IO.

Follows the WHATWG ``text/event-stream`` rules ("Interpreting an event stream",
https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation): CRLF,
CR or LF line ends, ``:`` comments, multi-line ``data``, ``event``/``id``/``retry`` fields. Chunk
boundaries may fall anywhere, including inside a UTF-8 sequence or between the CR and LF of one
line end. No input raises: bytes that are not UTF-8 become U+FFFD, and a field the rules say to
ignore (``retry`` whose value is not only ASCII digits, such as ``retry: ²`` or ``retry: ١٢٣``)
is ignored.

An event is dispatched only by the blank line that ends it. At the end of the stream
(``flush``) an event still waiting for its blank line is discarded, as the spec says ("any
pending data must be discarded") and as the ``openai`` SDK's decoder does: the
server closed before it finished the event, so its data may be half of what it meant to send.

Bounded in memory and time: bytes wait for their line end in a list of chunks (each chunk is
searched once, so a line fed in many chunks costs its length, not its length squared), and a
line or an event's data longer than ``MAX_EVENT_BYTES`` ends the decoding: ``overflow`` says so,
what follows is dropped, and ``crab.http_stream`` ends the call with that line. No model server
sends an event near that size; one that streams bytes without a line end until the idle
timeout would otherwise hold all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

_BOM = "\ufeff"
_IGNORED_CHARS = 300
_RETRY_DIGITS = 18
MAX_EVENT_BYTES = 32 * 1024 * 1024
"""The longest line, and the most data one event may gather, before the stream is refused."""
"""Longer ``retry`` values (beyond 64 bits, and past ``int``'s digit limit) are ignored."""


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

    __slots__ = (
        "_buffer",
        "_buffered",
        "_data",
        "_data_size",
        "_event",
        "_held",
        "_id",
        "_ignored",
        "_retry",
        "_started",
        "overflow",
    )

    def __init__(self) -> None:
        self._buffer: list[bytes] = []
        """Bytes of the line not yet ended, CRs already turned into LFs (none holds an LF)."""
        self._buffered = 0
        self._held = b""
        """A CR that ended the last chunk: the first half of a CRLF, perhaps."""
        self._data: list[str] = []
        self._data_size = 0
        self.overflow: str | None = None
        """Why decoding stopped (a line or an event over ``MAX_EVENT_BYTES``); None while it goes on."""
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._started = False
        self._ignored: list[str] = []

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Add ``chunk`` and return every event it completed, in order."""
        if self.overflow is not None:
            return []
        if self._held:
            chunk, self._held = self._held + chunk, b""
        if b"\r" in chunk:
            # A CR at the very end may be the first half of a CRLF split across chunks.
            if chunk.endswith(b"\r"):
                chunk, self._held = chunk[:-1], b"\r"
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = chunk.rfind(b"\n")
        if end < 0:
            self._buffered += len(chunk)
            if self._buffered > MAX_EVENT_BYTES:
                return self._overflow("a line")
            self._buffer.append(chunk)
            return []
        complete = b"".join([*self._buffer, chunk[:end]]) if self._buffer else chunk[:end]
        rest = chunk[end + 1 :]
        self._buffer, self._buffered = ([rest] if rest else []), len(rest)
        # Splitting on LF never cuts a UTF-8 sequence, so complete lines decode on their own.
        lines = self._text(complete).split("\n")
        if max(map(len, lines)) > MAX_EVENT_BYTES:
            return self._overflow("a line")
        return self._lines(lines)

    def flush(self) -> list[ServerSentEvent]:
        """End of stream: return what the last bytes complete, then discard any pending event.

        A CR at the very end was held back in case an LF followed; now it ends its line, so a
        stream whose last blank line is a lone CR still dispatches its event. An event without
        its blank line, and a final line cut off before its line end (it may be half a JSON
        document), are discarded. The decoder is then ready for a new stream.
        """
        tail = b"".join(self._buffer)
        held = self._held
        self._buffer, self._buffered, self._held = [], 0, b""
        events: list[ServerSentEvent] = []
        if held and self.overflow is None:
            events = self._lines(self._text(tail).split("\n"))
        self._data.clear()
        self._data_size = 0
        self._event = ""
        return events

    def _overflow(self, what: str) -> list[ServerSentEvent]:
        self.overflow = f"{what} of the stream is over {MAX_EVENT_BYTES // (1024 * 1024)} MiB"
        self._buffer, self._buffered, self._held = [], 0, b""
        self._data.clear()
        self._data_size = 0
        return []

    def _text(self, complete: bytes) -> str:
        """Complete lines as text; a BOM at the very start of the stream is dropped."""
        text = complete.decode("utf-8", errors="replace")
        if not self._started:
            self._started = True
            if text.startswith(_BOM):
                text = text[1:]
        return text

    def _lines(self, lines: list[str]) -> list[ServerSentEvent]:
        events: list[ServerSentEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append(ServerSentEvent("\n".join(data), self._event or "message", self._id, self._retry))
                    data.clear()
                    self._data_size = 0
                self._event = ""
                continue
            # ``data:`` is by far the most common line; handle it before the general case.
            if line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(" ") else value)
                self._data_size += len(value)
                if self._data_size > MAX_EVENT_BYTES:
                    return [*events, *self._overflow("an event")]
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
                self._data_size += len(value)
                if self._data_size > MAX_EVENT_BYTES:
                    return [*events, *self._overflow("an event")]
            elif name == "id":
                if "\0" not in value:
                    self._id = value
            elif name == "retry" and value.isascii() and value.isdigit() and len(value) <= _RETRY_DIGITS:
                # ``isdigit`` alone accepts "²" (int() then raises) and "١٢٣": only 0-9 count.
                self._retry = int(value)
            elif name != "retry" and sum(map(len, self._ignored)) < _IGNORED_CHARS:
                self._ignored.append(line[:_IGNORED_CHARS])
        return events
