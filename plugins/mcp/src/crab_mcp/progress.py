"""A running MCP tool's progress notifications as notices of the session that called it.

Every ``tools/call`` crab sends carries a progress token (the SDK adds one when a callback is
given); what the server reports comes back here and is emitted through the tool context as a
``crab.events.NoticeEvent`` (core has no progress event: renderers show a notice as one line, and
``crab run -o jsonl`` prints it as an event). At most one notice per ``INTERVAL`` seconds, plus the
one that reaches the total, so a server reporting every millisecond cannot flood a channel.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crab import ToolContext

INTERVAL = 1.0
MAX_MESSAGE = 200
"""Characters of the server's progress message shown."""


class Progress:
    """The SDK's ``progress_callback`` for one call."""

    def __init__(self, server: str, tool: str, ctx: ToolContext | None) -> None:
        self.server, self.tool, self.ctx = server, tool, ctx
        self._last = float("-inf")
        self.shown: list[str] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        done = total is not None and progress >= total
        now = time.monotonic()
        if not done and now - self._last < INTERVAL:
            return
        self._last = now
        text = line(self.server, self.tool, progress, total, message)
        self.shown.append(text)
        if self.ctx is not None:
            from crab.events import NoticeEvent

            self.ctx.emit(NoticeEvent(text))


def line(server: str, tool: str, progress: float, total: float | None, message: str | None) -> str:
    """``MCP git_log: 3/10 (30%) reading commits``."""
    amount = f"{progress:g}/{total:g} ({progress / total:.0%})" if total else f"{progress:g}"
    said = "".join(c for c in " ".join((message or "").split()) if c.isprintable())[:MAX_MESSAGE]
    return f"MCP {server}:{tool}: {amount}{' ' + said if said else ''}"
