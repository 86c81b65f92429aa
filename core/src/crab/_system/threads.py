"""Running a blocking call in a daemon thread that crab's exit never waits for (a sync tool, a
terminal prompt): ``run_in_thread``, on worker threads kept for the next call."""

from __future__ import annotations

import contextvars
import os
import queue
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from crab._system import watchdog

if TYPE_CHECKING:
    import asyncio

IDLE_SECONDS = 30.0
"""How long a worker with nothing to do waits for the next call before its thread ends."""
MAX_IDLE = 64
"""The most workers kept waiting; one more that finishes a call ends instead (a 200-call reply
starts as many threads as run at once, and keeps this many for the next one)."""


class Cancellable(Protocol):
    """What ``run_in_thread`` tells when the call is given up (a ``crab.ToolContext`` is one)."""

    @property
    def cancelled(self) -> threading.Event: ...


class _Job:
    """One call handed to a worker, and where its outcome goes."""

    __slots__ = ("context", "fn", "future", "kwargs", "loop")

    def __init__(
        self,
        fn: Callable[..., Any],
        kwargs: dict[str, Any],
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
    ) -> None:
        self.fn = fn
        self.kwargs = kwargs
        self.context = contextvars.copy_context()  # per call: a worker carries nothing between calls
        self.loop = loop
        self.future = future


class _Worker:
    """A daemon thread running one job at a time; between jobs it waits in ``_idle``.

    A worker is put back in ``_idle`` only by its own thread, after its job returned: a call
    abandoned at a cancel keeps its worker out of reach until the function ends by itself.
    """

    __slots__ = ("inbox", "thread")

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name="crab-worker", daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                job = self.inbox.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with _idle_lock:
                    if self in _idle:  # nobody took this worker meanwhile: end the thread
                        _idle.remove(self)
                        return
                job = self.inbox.get()  # taken just now: its job is on the way
            ok, value = _call(job)
            watchdog.done(self.thread)
            # Waiting again before the caller hears back: its next call finds this worker.
            with _idle_lock:
                keep = len(_idle) < MAX_IDLE
                if keep:
                    _idle.append(self)
            _Settler.of(job.loop).put(job.future, ok, value)
            if not keep:
                return
            del job, value  # nothing of a finished call stays reachable while the worker waits


_idle: list[_Worker] = []
"""Workers waiting for a call, the most recently used (warmest) last."""
_idle_lock = threading.Lock()


def _forget_workers() -> None:
    # A forked child has none of its parent's threads: handing a job to one would wait forever.
    global _idle_lock
    _idle.clear()
    _idle_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def _call(job: _Job) -> tuple[bool, Any]:
    try:
        return True, job.context.run(job.fn, **job.kwargs)
    except Exception as exc:
        return False, exc
    except BaseException as exc:  # SystemExit or the like from a tool: a failure of that call only
        return False, RuntimeError(f"{type(exc).__name__} raised in the tool")


class _Settler:
    """The outcomes workers hand back to one event loop, settled together.

    Each ``call_soon_threadsafe`` writes to the loop's wake-up pipe and wakes it; the calls of a
    wide reply end close together, so a worker wakes the loop only when no earlier outcome is
    waiting to be settled, and one callback settles every outcome there is by then.
    """

    __slots__ = ("__weakref__", "lock", "loop", "outcomes", "scheduled")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lock = threading.Lock()
        self.outcomes: list[tuple[asyncio.Future[Any], bool, Any]] = []
        self.scheduled = False

    @staticmethod
    def of(loop: asyncio.AbstractEventLoop) -> _Settler:
        settler = _settlers.get(loop)
        if settler is None:
            with _settlers_lock:
                settler = _settlers.get(loop)
                if settler is None:
                    settler = _settlers[loop] = _Settler(loop)
        return settler

    def put(self, future: asyncio.Future[Any], ok: bool, value: Any) -> None:
        """Called in a worker thread: ``future`` gets its outcome in the loop's thread."""
        with self.lock:
            self.outcomes.append((future, ok, value))
            if self.scheduled:
                return  # the callback already on its way settles this one too
            self.scheduled = True
        try:
            self.loop.call_soon_threadsafe(self._settle_all)
        except RuntimeError:  # the loop is gone: these calls were abandoned long ago
            with self.lock:
                self.outcomes.clear()

    def _settle_all(self) -> None:
        with self.lock:
            outcomes, self.outcomes = self.outcomes, []
            self.scheduled = False
        for future, ok, value in outcomes:
            _settle(future, ok, value)


_settlers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Settler] = weakref.WeakKeyDictionary()
_settlers_lock = threading.Lock()


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


def _start(job: _Job) -> None:
    """Hand ``job`` to a waiting worker, or to a new one: a call never waits for a busy worker,
    so a stuck function delays nothing but itself."""
    with _idle_lock:
        worker = _idle.pop() if _idle else None
    if worker is not None:
        watchdog.watch(worker.thread)
        worker.inbox.put(job)
        return
    worker = _Worker()
    worker.inbox.put(job)
    watchdog.watch(worker.thread)  # before start: a thread that takes the GIL at once is watched
    try:
        worker.thread.start()
    except RuntimeError:
        watchdog.done(worker.thread)
        raise


async def run_in_thread(fn: Callable[..., Any], kwargs: dict[str, Any], ctx: Cancellable | None = None) -> Any:
    """Call ``fn(**kwargs)`` in a daemon worker thread, in a copy of the caller's context; on
    cancellation, abandon it.

    Not ``asyncio.to_thread``: the default executor's threads are joined at exit, so one stuck
    tool would keep crab from ending. A cancelled call sets ``ctx.cancelled`` so a well-behaved
    function stops by itself; one that does not runs on unobserved until the process ends, and
    its thread takes no other call until then. Workers are kept between calls (starting a
    thread per call cost ~0.1 ms, more than a small ``read``). Also for other blocking calls that
    must not hold crab's exit (a terminal prompt).
    """
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    _start(_Job(fn, kwargs, loop, future))
    try:
        return await future
    except asyncio.CancelledError:
        if ctx is not None:
            ctx.cancelled.set()  # the thread cannot be stopped; tell the function to stop itself
        raise
