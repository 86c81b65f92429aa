"""Running a blocking call in a daemon thread of its own that crab's exit never waits for (a sync
tool, a terminal prompt): ``run_in_thread``."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any, Protocol

from crab._system import watchdog


class Cancellable(Protocol):
    """What ``run_in_thread`` tells when the call is given up (a ``crab.ToolContext`` is one)."""

    @property
    def cancelled(self) -> threading.Event: ...


async def run_in_thread(fn: Callable[..., Any], kwargs: dict[str, Any], ctx: Cancellable | None = None) -> Any:
    """Call ``fn(**kwargs)`` in a new daemon thread; on cancellation, abandon it.

    Not ``asyncio.to_thread``: the default executor's threads are joined at exit, so one stuck
    tool would keep crab from ending. A cancelled call sets ``ctx.cancelled`` so a well-behaved
    function stops by itself; one that does not runs on unobserved until the process ends.
    Also for other blocking calls that must not hold crab's exit (a terminal prompt).
    """
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            ok, value = True, context.run(fn, **kwargs)
        except Exception as exc:
            ok, value = False, exc
        except BaseException as exc:  # SystemExit or the like from a tool: a failure of that call only
            ok, value = False, RuntimeError(f"{type(exc).__name__} raised in the tool")
        watchdog.done(threading.current_thread())
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:
            pass  # the loop is gone: this call was abandoned long ago

    thread = threading.Thread(target=work, name=f"crab-tool-{getattr(fn, '__name__', 'tool')}", daemon=True)
    watchdog.watch(thread)
    try:
        thread.start()
    except RuntimeError:
        watchdog.done(thread)
        raise
    try:
        return await future
    except asyncio.CancelledError:
        if ctx is not None:
            ctx.cancelled.set()  # the thread cannot be stopped; tell the function to stop itself
        raise
