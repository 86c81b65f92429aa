"""``crab serve`` on Temporal (``[serve] engine = "temporal"``): every channel's turns go to the
workers through one Temporal client per serving process, connected at the first turn and shared
by every session's turn after it (a client per turn would start a runtime per message)."""

from __future__ import annotations

import asyncio
from typing import Any

from crab_temporal.client import connect
from crab_temporal.settings import TemporalSettings

_clients: dict[tuple[int, TemporalSettings], Any] = {}
_locks: dict[int, asyncio.Lock] = {}


async def shared_client(settings: TemporalSettings) -> Any:
    """The connected client for ``settings`` in this event loop (``Unreachable`` when Temporal does
    not answer: that turn fails with the line, and the next one tries again)."""
    loop = id(asyncio.get_running_loop())
    key = (loop, settings)
    found = _clients.get(key)
    if found is not None:
        return found
    async with _locks.setdefault(loop, asyncio.Lock()):
        found = _clients.get(key)
        if found is None:
            found = _clients[key] = await connect(settings)
    return found
