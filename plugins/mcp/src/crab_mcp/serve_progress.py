"""``crab mcp serve``: progress notifications while a long tool call runs.

When the client's ``tools/call`` carries a progress token, the bridge sends a heartbeat every
``HEARTBEAT`` seconds until the call ends: ``progress`` is the seconds elapsed (it only grows, as
MCP requires), no ``total`` (crab cannot know how long a tool takes), and a message naming the
tool. Without a token nothing is sent. A client that went away makes the notification fail
quietly; the call itself goes on to its own end or timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")

HEARTBEAT = 2.0
"""Seconds between two progress notifications of one running call."""


def progress_token(ctx: Any) -> str | int | None:
    """The token the client sent in the request's ``_meta``, if any."""
    meta = getattr(ctx, "meta", None) or {}
    token = meta.get("progress_token") if isinstance(meta, dict) else getattr(meta, "progress_token", None)
    return token if isinstance(token, (str, int)) else None


async def with_heartbeat(work: Awaitable[T], ctx: Any, tool: str, every: float = HEARTBEAT) -> T:
    """``await work``, sending a progress notification every ``every`` seconds when asked for."""
    token = progress_token(ctx)
    if token is None:
        return await work
    task = asyncio.ensure_future(work)
    started = time.monotonic()
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            elapsed = round(time.monotonic() - started, 1)
            with contextlib.suppress(Exception):
                await ctx.session.send_progress_notification(
                    token, elapsed, None, f"{tool} still running ({elapsed:.0f} s)", related_request_id=ctx.request_id
                )
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
