"""A server's log file: secrets masked, lines cut, the size of one start bounded.

``LogSink`` is the only writer of ``$CRAB_HOME/mcp/logs/<server>.log`` for one start of a server.
Three things reach it: the server's stderr (a stdio server writes to a pipe, never to the file:
``start_pump`` starts a daemon thread that reads it line by line), lines a stdio server printed on
stdout that are not JSON-RPC, and the MCP SDK's own log records about that server
(``crab_mcp.sdklog``). Every line has the values of the server's ``${VAR}`` references and every
secret crab knows masked, is cut at ``MAX_LINE`` characters, and counts against ``limit`` bytes
per start (then one note); the pipe is still drained, so a server that floods its stderr never
blocks. An over-long stderr line is cut and the rest of it dropped, so no piece of a secret split
across the cut reaches the file.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import IO, Any

MAX_LINE = 8192
"""Characters of one line kept in the log."""


class LogSink:
    """Thread-safe, masked, bounded writes to one server's log (see the module docstring)."""

    def __init__(self, log: IO[str], secrets: Sequence[str], limit: int) -> None:
        from crab.secrets import Redactor

        self._log = log
        self._redactor: Any = Redactor(list(secrets))
        self.hold = max((len(s) for s in self._redactor.secrets), default=0)
        """The longest secret: how much of a cut line's end may hold part of one."""
        self._limit = limit
        self._written = 0
        self._lock = threading.Lock()
        self._users = 1  # the opener; the pump thread takes one more
        self._closed = False

    def mask(self, text: str) -> str:
        masked: str = self._redactor.text(text)
        return masked

    def line(self, text: str, prefix: str = "") -> None:
        """Write one line (masked, cut at ``MAX_LINE``), as ``prefix`` + the line."""
        self.write(prefix + self.mask(text)[:MAX_LINE] + "\n")

    def write(self, text: str) -> None:
        """Write already masked text, unless this start's budget is spent."""
        with self._lock:
            if self._closed or self._written >= self._limit:
                return
            if self._written + len(text) > self._limit:
                text = f"[crab: log cut at {self._limit:,} bytes for this start; the rest is dropped]\n"
                self._written = self._limit
            else:
                self._written += len(text)
            try:
                self._log.write(text)
                self._log.flush()
            except (OSError, ValueError):
                self._closed = True  # a full disk must not break the server's connection

    def _take(self) -> None:
        with self._lock:
            self._users += 1

    def close(self) -> None:
        """Give up one use; the file closes when the opener and the pump are both done."""
        with self._lock:
            self._users -= 1
            if self._users > 0 or self._closed:
                return
            self._closed = True
        self._log.close()


def start_pump(sink: LogSink, name: str) -> IO[str]:
    """Start the thread that copies a pipe into ``sink``; returns the pipe's write end, for the
    child's stderr (close it once the child has it)."""
    read_fd, write_fd = os.pipe()
    sink._take()
    thread = threading.Thread(target=_pump, args=(read_fd, sink), name=f"crab-mcp-log-{name}", daemon=True)
    thread.start()
    return os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")


def _pump(read_fd: int, sink: LogSink) -> None:
    pending = b""
    skipping = False  # inside the dropped rest of an over-long line
    try:
        with os.fdopen(read_fd, "rb", buffering=0) as pipe:
            while True:
                try:
                    data = pipe.read(65536)
                except OSError:
                    break
                if not data:
                    break
                pending += data
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    if skipping:
                        skipping = False
                        continue
                    sink.line(raw.decode("utf-8", "replace"))
                if len(pending) > MAX_LINE * 2:
                    if not skipping:
                        text = sink.mask(pending.decode("utf-8", "replace"))
                        sink.write(text[: min(MAX_LINE, max(0, len(text) - sink.hold))] + " [line cut]\n")
                    pending, skipping = b"", True
            if pending and not skipping:
                sink.line(pending.decode("utf-8", "replace"))
    finally:
        sink.close()
