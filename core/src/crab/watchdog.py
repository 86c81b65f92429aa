"""The last-resort watchdog: ends crab when its interpreter is held, without needing the GIL.

A sync tool stuck in C code that holds the GIL (a catastrophic ``re`` match, say) stops every
Python thread, the event loop and the signal handlers with it: no timeout, no Ctrl-C. Python's
``faulthandler`` runs its timer in a C thread that needs no GIL; armed, it prints every
thread's traceback and calls ``_exit(1)``. Only the CLI enables this (``enable``): embedded in
another program, crab never ends its host. While a sync tool thread is alive the event loop
re-arms the timer every ``TICK`` seconds, so it fires only after ``STALL`` seconds in which
the loop could not run; after a signal, ``exit_within`` bounds the clean-up the same way.
"""

from __future__ import annotations

import faulthandler
import sys
import threading
import time
from typing import Any

STALL = 1.5
"""Seconds the event loop may be held while a sync tool runs; with TICK, within Ctrl-C's 2 s."""
TICK = 0.25

_lock = threading.Lock()
_enabled = False
_threads: set[threading.Thread] = set()
_exit_at: float | None = None
_ticking = False


def enable() -> None:
    """Let the watchdog end this process (the ``crab`` command does; libraries and tests do not)."""
    global _enabled
    _enabled = True


def disable() -> None:
    global _enabled, _exit_at
    _enabled = False
    _exit_at = None
    faulthandler.cancel_dump_traceback_later()


def alive_threads() -> list[threading.Thread]:
    """Sync tool threads still running, abandoned ones included."""
    with _lock:
        # A thread about to start (no ident yet) counts: it is watched from before its first step.
        _threads.difference_update([t for t in _threads if t.ident is not None and not t.is_alive()])
        return list(_threads)


def watch(thread: threading.Thread, loop: Any) -> None:
    """Watch the event loop ``loop`` while ``thread`` (a sync tool's) is alive.

    Call it before ``thread.start()``: a thread that takes the GIL at once would otherwise
    stop this very call from arming the timer.
    """
    global _ticking
    with _lock:
        _threads.add(thread)
        start = not _ticking and _enabled
        if start:
            _ticking = True
    _arm()
    if start:
        loop.call_later(TICK, _tick, loop)


def forget(thread: threading.Thread) -> None:
    """Stop watching a thread that never started."""
    with _lock:
        _threads.discard(thread)
    _arm()


def _tick(loop: Any) -> None:
    global _ticking
    _arm()
    with _lock:
        more = _enabled and bool(_threads)
        _ticking = more
    if more:
        loop.call_later(TICK, _tick, loop)


def exit_within(seconds: float) -> None:
    """End the process (exit 1, tracebacks on stderr) unless it has exited by itself in ``seconds``."""
    global _exit_at
    _exit_at = time.monotonic() + seconds
    _arm()


def clear_exit() -> None:
    """Withdraw ``exit_within`` (crab chat goes on after an interrupted turn)."""
    global _exit_at
    _exit_at = None
    _arm()


def _arm() -> None:
    if not _enabled:
        return
    limits: list[float] = []
    if alive_threads():
        limits.append(STALL)
    if _exit_at is not None:
        limits.append(max(0.05, _exit_at - time.monotonic()))
    stream = sys.__stderr__
    if not limits or stream is None:
        faulthandler.cancel_dump_traceback_later()
        return
    try:
        faulthandler.dump_traceback_later(min(limits), exit=True, file=stream)
    except (ValueError, OSError, RuntimeError):
        faulthandler.cancel_dump_traceback_later()
