"""``crab mcp serve``: a client's ``notifications/cancelled`` stops the tool call it names.

The SDK applies the notification by cancelling the request handler's anyio cancel scope, and an
anyio scope cancels again at every ``await`` until the handler leaves it: a tool that ends its
process group when cancelled (crab-tools-basic's ``bash``: ``crab.processes``) would have that
cleanup cut short at its first ``await``, and the child ran on. So the call runs in an asyncio
task of its own: a cancel of the handler cancels that task once (asyncio's rule, which every
crab tool is written for) and waits, shielded, up to ``STOP_GRACE`` seconds for the tool to
end what it started, before the handler's cancellation goes on (the SDK sends no answer to a
cancelled request).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")

STOP_GRACE = 10.0
"""Seconds a cancelled call may take to end its processes (bash's own grace is 0.5 s)."""


async def stoppable(work: Awaitable[T], grace: float = STOP_GRACE) -> T:
    """``await work`` in a task of its own, cancelled once (and waited for) when the caller is."""
    import anyio

    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait({task}, timeout=grace)
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: a tool that failed while stopping is no stray error
        raise
