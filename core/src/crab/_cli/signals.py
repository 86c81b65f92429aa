"""How the ``crab`` command ends on a signal (the turn aborted and settled, exit 128 + n; ``crab
serve`` drains first), and what it cleans up on the way out (``finish``)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

BUDGET = 1.9
"""Seconds from a signal to the process's end: past them the watchdog's deadline ends it with one
line and 128 + n (``SignalGate.last_words``), its GIL-free timer a little later if no Python thread
can run (``crab._system.watchdog.GRACE``)."""
ENDING = 0.3
"""Seconds the deadline spends ending tool processes before the exit (the group watcher, which
sees crab's pipe close, ends the tracked groups still left)."""
HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """The command was stopped by ``signum``; ``exit_code`` is the shell's convention (128 + n)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def message(self) -> str:
        return "crab: interrupted" if self.signum == signal.SIGINT else f"crab: stopped by {self.args[0]}"


class SignalGate:
    """Turns signals into a cancelled main task, or into ``Interrupted`` when none is running.

    SIGINT, SIGTERM and SIGHUP cancel the running main task and end the command with 130, 143 or
    129. A command run with a ``drain`` callback (``crab serve``) gets the first signal as a call
    to it instead, with ``drain_seconds`` more on the watchdog's clock, and ends normally once
    drained; a second signal cancels. ``crab chat`` catches a SIGINT to stop one turn and goes on.
    From the first signal the watchdog gives the clean-up ``BUDGET`` seconds; past them crab ends
    with one line and the signal's code (``last_words``).
    """

    def __init__(self) -> None:
        self.task: asyncio.Task[Any] | None = None
        self.pending: int | None = None
        self.installed = False
        self.drain: Callable[[int], bool | None] | None = None
        self.drain_seconds = 0.0
        self.draining: int | None = None
        self.stopped: int | None = None
        """The signal that stopped an event loop run outside ``run`` (a plugin's ``asyncio.run``)."""
        self.raised: int | None = None
        """The signal raised as ``Interrupted`` with no task to cancel, until ``turn_stopped``."""
        self.finishing = False
        """The command is on its way out (``finish``): a signal then only keeps the watchdog's deadline."""

    def install(self) -> None:
        for sig in HANDLED:
            try:
                signal.signal(sig, self._handle)
            except (ValueError, OSError):  # not the main thread, or a platform without it
                continue
        self.installed = True

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        # Loaded (and enabled) by ``run``: a command that never ran agent work has nothing to bound.
        watchdog = sys.modules.get("crab._system.watchdog")
        task = self.task
        ending = self.finishing or self.stopped is not None or self.raised is not None
        if ending or (self.pending is not None and task is not None):
            # Already ending: raising now would interrupt the clean-up itself (ending processes,
            # settling sessions) with a traceback. The first signal's deadline still holds.
            return
        if task is not None and not task.done() and self.drain is not None and self.draining is None:
            self.draining = signum
            if watchdog is not None:
                self._deadline(watchdog, signum, self.drain_seconds + BUDGET)
            task.get_loop().call_soon_threadsafe(self._drain_or_cancel, task, signum)
            return
        if task is None or task.done() or self.pending is not None:
            if watchdog is not None:
                self._deadline(watchdog, signum, BUDGET)
            loop = _running_loop() if task is None else None
            if loop is not None and self.stopped is None:
                # A plugin command's own ``asyncio.run``: an exception raised here, in the middle
                # of a callback or a task's step, would be swallowed by the loop (or end only that
                # task). Stop the loop instead: asyncio.run then cancels its tasks, which settle.
                self.stopped = signum
                loop.call_soon_threadsafe(loop.stop)
                return
            self.raised = signum
            raise Interrupted(signum)
        self.pending = signum
        if watchdog is not None:
            self._deadline(watchdog, signum, BUDGET)
        task.cancel()
        task.get_loop().call_soon_threadsafe(lambda: None)  # wake a loop blocked in select()

    def _deadline(self, watchdog: Any, signum: int, seconds: float) -> None:
        watchdog.exit_within(seconds, 128 + signum, lambda: self.last_words(signum, seconds))

    def last_words(self, signum: int, seconds: float) -> str:
        """At the deadline (in the watchdog's thread, the main thread still busy): end the tool
        processes (at most ``ENDING`` seconds), and the one line to print, saying what was still
        running; none once an ``Interrupted`` is on its way out (the command says how it ended)."""
        _end_processes(ENDING)
        if self.finishing or self.raised is not None:
            return ""
        task = self.task
        if task is not None and not task.done() and self.draining is not None and self.pending is None:
            still = " (the channels were still draining)"
        elif task is not None and not task.done():
            still = " (the stopped turn was still settling)"
        elif self.stopped is not None:
            still = " (the command's tasks were still ending)"
        else:
            still = ""
        return f"{Interrupted(signum).message}; clean-up did not finish within {seconds:g} s{still}"

    def _drain_or_cancel(self, task: asyncio.Task[Any], signum: int) -> None:
        """In the loop: drain, or, where there is nothing to drain yet (still starting), cancel."""
        if self.drain is not None and self.drain(signum) is False and not task.done():
            self.pending = signum
            task.cancel()

    def run(
        self,
        runner: asyncio.Runner,
        coro: Coroutine[Any, Any, T],
        *,
        drain: Callable[[int], bool | None] | None = None,
        drain_seconds: float = 0.0,
    ) -> T:
        """``runner.run(coro)``, cancellable by a signal; raises ``Interrupted`` when one came.

        With ``drain``, the first signal calls ``drain(signum)`` in the event loop instead of
        cancelling, and the watchdog allows ``drain_seconds`` more for the clean-up."""
        import asyncio

        from crab._system import watchdog

        async def main() -> T:
            self.task = asyncio.current_task()
            return await coro

        watchdog.enable()  # the crab command owns this process: the watchdog may end it
        self.pending = None
        self.drain, self.drain_seconds, self.draining = drain, drain_seconds, None
        try:
            return runner.run(main())
        except asyncio.CancelledError:
            if self.pending is not None:
                raise Interrupted(self.pending) from None
            raise
        finally:
            signum = self.pending
            if signum is not None:
                self.raised = signum  # until turn_stopped: a later signal must not break the clean-up
            self.pending = None
            self.task = None
            self.drain, self.draining = None, None
            if signum is not None and not sys.exc_info()[0]:
                # The task finished anyway (the signal came as it ended): still honour it.
                raise Interrupted(signum)


def _end_processes(seconds: float) -> None:
    """``processes.terminate_all``, given up after ``seconds`` (it waits for the processes to die)."""
    if "crab.processes" not in sys.modules:
        return
    import threading

    from crab import processes

    ending = threading.Thread(target=processes.terminate_all, args=(0.1,), name="crab-exit-processes", daemon=True)
    ending.start()
    ending.join(seconds)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running in this thread, if any (without importing asyncio for nothing)."""
    aio = sys.modules.get("asyncio")
    if aio is None:
        return None
    try:
        loop: asyncio.AbstractEventLoop = aio.get_running_loop()
    except RuntimeError:
        return None
    return loop


GATE = SignalGate()


def turn_stopped() -> None:
    """``crab chat`` goes on after a stopped turn: withdraw the exit deadline."""
    from crab._system import watchdog

    GATE.raised = None
    watchdog.clear_exit()


def finish(code: int) -> int:
    """The way out of every command: end tool processes; skip joining abandoned tool threads."""
    GATE.finishing = True
    if "crab.processes" in sys.modules:
        from crab import processes

        processes.terminate_all()
    if "crab._system.watchdog" in sys.modules:
        from crab._system import watchdog

        if watchdog.alive_threads():
            # A tool thread that never returned: interpreter shutdown could wait on it.
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(code)
    return code
