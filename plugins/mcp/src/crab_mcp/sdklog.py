"""The MCP SDK's log records go to the log of the server they concern, not to crab's terminal.

The SDK logs (often with a traceback) whatever a server does wrong: a reply it cannot parse, a
stream that broke. crab configures no logging, so Python would print those records on stderr,
around the masked and bounded log crab keeps for the server. Each server's owner task sets
``current`` to that server's ``LogSink``; the tasks the SDK starts inside inherit it, and the
handler installed on the ``mcp`` logger writes the record there as one line (the exception's type
and message, no traceback). A record logged outside any server (``crab mcp serve`` runs the SDK's
server) goes on to Python's usual handling.
"""

from __future__ import annotations

import contextvars
import logging

from crab_mcp.logpump import LogSink

current: contextvars.ContextVar[LogSink | None] = contextvars.ContextVar("crab_mcp_log", default=None)
"""The log of the server whose owner task (or one of its SDK tasks) is running."""


class _ToServerLog(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        sink = current.get()
        if sink is None:
            logging.getLogger().handle(record)  # root's handlers, or Python's last resort
            return
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text = f"{text}: {type(exc).__name__}: {exc}"
        sink.line(" ".join(text.split()), prefix=f"[mcp sdk {record.levelname.lower()}] ")


_HANDLER = _ToServerLog(logging.WARNING)


def install() -> None:
    """Route the ``mcp`` logger's records as described above (once; later calls do nothing)."""
    logger = logging.getLogger("mcp")
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)
        logger.propagate = False
