"""A private event loop on its own thread, on which the store's connection pool lives.

psycopg's async pool belongs to the loop that opened it (its workers are tasks there), but a
``crab.Store`` is called from whatever loop its caller runs: ``crab serve``'s, or a fresh
``asyncio.run`` per step in the contract suite and the CLI. So the pool lives on this loop and
every store call is handed over to it and awaited from the caller's loop. The hop costs tens of
microseconds, far below a round trip to the server.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An asyncio loop running forever on a daemon thread until ``stop``."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    async def call(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on this loop; cancelling the caller cancels it there too."""
        future = asyncio.run_coroutine_threadsafe(work, self.loop)
        return await asyncio.wrap_future(future)

    def call_blocking(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on this loop from a thread with no running loop (closing at exit)."""
        return asyncio.run_coroutine_threadsafe(work, self.loop).result()

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()
