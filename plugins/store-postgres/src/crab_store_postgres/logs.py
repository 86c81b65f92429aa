"""psycopg's own log records (a connection lost, a reconnection failing) as crab's one-line warnings.

psycopg and psycopg-pool report through ``logging``. crab configures no handler, so Python's
last-resort handler printed every record raw on stderr, continuation lines and object reprs
included: about twenty lines when the server went away under ``crab serve``, as the pool retried.
One handler on their loggers turns each record into one line (``store-postgres: …``, the DSN and
its password redacted), shows the same line at most once per ``REPEAT_SECONDS``, and hands it to
the running agent as a warning notice, so it goes through the renderer (and crab's redaction) like
every other notice; with no agent running (a ``crab`` command without one) it goes to stderr.
Records pass on to any handler an embedding program configured, as before.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

LOGGERS = ("psycopg", "psycopg_pool")  # psycopg_pool's pool logs as "psycopg.pool", its scheduler as its own
REPEAT_SECONDS = 300.0
"""The same line is shown again only after this long: a server that stays down is not a flood."""
_OBJECT = re.compile(r":?\s*<[^<>]* at 0x[0-9a-fA-F]+>")  # <psycopg.AsyncConnection [BAD] at 0x7f…>


class _Route:
    """Where lines go, and what was shown when; shared by every store of the process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # records come from the store's own loop thread and psycopg's
        self.redactors: dict[int, Callable[[str], str]] = {}
        self.agent: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.shown: dict[str, float] = {}


_ROUTE = _Route()


def one_line(message: str) -> str:
    """The record's first line, without object reprs: ``store-postgres: discarding closed connection``."""
    first = next((line.strip() for line in message.splitlines() if line.strip()), "")
    return f"store-postgres: {_OBJECT.sub('', first).strip() or 'psycopg reported a problem'}"


class CrabLines(logging.Handler):
    """Each WARNING-or-worse record of psycopg as one redacted, deduplicated crab line."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = one_line(record.getMessage())
            with _ROUTE.lock:
                for redact in _ROUTE.redactors.values():
                    line = redact(line)
                now = time.monotonic()
                if now - _ROUTE.shown.get(line, -REPEAT_SECONDS) < REPEAT_SECONDS:
                    return
                if len(_ROUTE.shown) >= 1000:  # distinct lines are few; never let them pile up
                    _ROUTE.shown.clear()
                _ROUTE.shown[line] = now
                agent, loop = _ROUTE.agent, _ROUTE.loop
            if agent is not None and loop is not None and not loop.is_closed():
                try:
                    loop.call_soon_threadsafe(agent.notice, line, "warning")
                    return
                except RuntimeError:  # the loop closed in between: fall back to stderr
                    pass
            sys.stderr.write(f"warning: {line}\n")
        except Exception:  # a log line must never break the store
            self.handleError(record)


_HANDLER = CrabLines()


def watch(owner: object, redact: Callable[[str], str]) -> None:
    """Route psycopg's records as crab lines while ``owner`` (an open store) lives; ``redact`` masks its DSN."""
    with _ROUTE.lock:
        _ROUTE.redactors[id(owner)] = redact
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _HANDLER not in logger.handlers:
            logger.addHandler(_HANDLER)  # so the last-resort handler no longer prints the raw record


def unwatch(owner: object) -> None:
    with _ROUTE.lock:
        _ROUTE.redactors.pop(id(owner), None)


def route_to(agent: Any) -> None:
    """Lines go to ``agent.notice`` (an ``AgentHandle``), called in its event loop, until ``stop_routing``."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # called outside the agent's loop: there is nowhere safe to post to
        return
    with _ROUTE.lock:
        _ROUTE.agent, _ROUTE.loop = agent, loop


def stop_routing(agent: Any) -> None:
    """Back to stderr, unless another agent took the route meanwhile (each hook gets a new handle
    of the same agent, so the agent is known by its config)."""
    with _ROUTE.lock:
        if _ROUTE.agent is not None and getattr(_ROUTE.agent, "config", None) is getattr(agent, "config", None):
            _ROUTE.agent, _ROUTE.loop = None, None
