"""Blocking work (DNS lookups, HTML conversion) off the event loop, in daemon threads.

Not ``asyncio.to_thread``: the default executor's threads are joined at exit, so a resolver that
hangs or a conversion still running when its call was abandoned would hold crab's exit. A
cancelled await leaves the thread to finish unobserved.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def in_daemon_thread(fn: Callable[[], T], name: str) -> T:
    """``fn()`` in a new daemon thread; its result or exception, delivered to the running loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: Exception | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]  # None only when fn returned None

    def work() -> None:
        result: T | None = None
        error: Exception | None = None
        try:
            result = fn()
        except Exception as exc:
            error = exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:
            pass  # the loop is gone: the call was abandoned long ago

    threading.Thread(target=work, name=f"crab-tools-web-{name}", daemon=True).start()
    return await future
