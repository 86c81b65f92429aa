"""A stdio server's stderr on its way to the log file: secrets masked, the size bounded.

The server writes to a pipe, never to the file: a daemon thread reads it line by line, masks
the values of the server's ``${VAR}`` references and every secret crab knows, and writes at most
``limit`` bytes per start (then one note), still draining the pipe so a server that floods its
stderr never blocks. A line longer than ``MAX_LINE`` is cut, and the rest of it dropped, so no
piece of a secret split across the cut reaches the file.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import IO, Any

MAX_LINE = 8192
"""Characters of one stderr line kept in the log."""


def start_pump(log: IO[str], secrets: Sequence[str], limit: int, name: str) -> IO[str]:
    """Start the thread that copies the pipe into ``log`` (closing it at the end of the pipe);
    returns the pipe's write end, for the child's stderr (close it once the child has it)."""
    from crab import Redactor

    read_fd, write_fd = os.pipe()
    redactor = Redactor(list(secrets))
    hold = max((len(s) for s in redactor.secrets), default=0)
    thread = threading.Thread(
        target=_pump, args=(read_fd, log, redactor, hold, limit), name=f"crab-mcp-log-{name}", daemon=True
    )
    thread.start()
    return os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")


def _pump(read_fd: int, log: IO[str], redactor: Any, hold: int, limit: int) -> None:
    written = 0
    pending = b""
    skipping = False  # inside the dropped rest of an over-long line
    with os.fdopen(read_fd, "rb", buffering=0) as pipe, log:

        def put(text: str) -> None:
            nonlocal written
            if written >= limit:
                return
            if written + len(text) > limit:
                log.write(f"[crab: log cut at {limit:,} bytes for this start; the rest of its stderr is dropped]\n")
                log.flush()
                written = limit
                return
            log.write(text)
            log.flush()
            written += len(text)

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
                put(redactor.text(raw.decode("utf-8", "replace"))[:MAX_LINE] + "\n")
            if len(pending) > MAX_LINE * 2:
                if not skipping:
                    text = redactor.text(pending.decode("utf-8", "replace"))
                    put(text[: min(MAX_LINE, max(0, len(text) - hold))] + " [line cut]\n")
                pending, skipping = b"", True
        if pending and not skipping:
            put(redactor.text(pending.decode("utf-8", "replace"))[:MAX_LINE] + "\n")
