"""The last-resort watchdog: ends crab when its interpreter is held (a sync tool stuck in C code
holding the GIL), through ``faulthandler``'s GIL-free timer; only the CLI enables it
(docs/security.md)."""

from __future__ import annotations

import sys
import threading
import time

STALL = 1.5
"""Seconds no Python thread may run while a sync tool runs; with TICK, within Ctrl-C's 2 s."""
TICK = 0.25
IDLE_TICKS = 120
"""Ticks (30 s) the heartbeat waits with no sync tool running before its thread ends: calls a
model reply apart reuse it rather than start a thread each (as ``crab._system.threads`` does)."""

# Re-entrant: the signal handler (main thread) may arm while the main thread is inside _arm.
_lock = threading.RLock()
_arm_lock = threading.RLock()
_enabled = False
_threads: set[threading.Thread] = set()
_exit_at: float | None = None
_ticking = False
ticks = 0
"""Heartbeats so far (tests wait on it)."""


def enable() -> None:
    """Let the watchdog end this process (the ``crab`` command does; libraries and tests do not)."""
    global _enabled
    import faulthandler  # noqa: F401  (loaded here, not at import: crab --help never needs it)

    _enabled = True


def alive_threads() -> list[threading.Thread]:
    """Sync tool threads still running, abandoned ones included."""
    with _lock:
        # A thread about to start (no ident yet) counts: it is watched from before its first step.
        _threads.difference_update([t for t in _threads if t.ident is not None and not t.is_alive()])
        return list(_threads)


def watch(thread: threading.Thread) -> None:
    """Watch the interpreter while ``thread`` (a sync tool's) runs; call ``done`` when it ends.

    While any such thread runs (abandoned ones included) a heartbeat thread re-arms the timer
    every ``TICK`` seconds, so it fires (every thread's traceback, then ``_exit(1)``) only after
    ``STALL`` seconds in which no Python thread could run.

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
        threading.Thread(target=_heartbeat, name="crab-watchdog-heartbeat", daemon=True).start()


def done(thread: threading.Thread) -> None:
    """``thread`` finished its tool call (or never started): stop watching it."""
    with _lock:
        _threads.discard(thread)
    _arm()


def _heartbeat() -> None:
    # Runs only when it gets the GIL: a thread holding it lets the timer run out.
    global _ticking, ticks
    idle = 0
    while True:
        _arm()
        with _lock:
            ticks += 1
            idle = 0 if _threads else idle + 1
            if not _enabled or idle > IDLE_TICKS:
                _ticking = False
                break
        time.sleep(TICK)
    _arm()  # after a last thread's ``done`` raced with the ``_arm`` above: leave nothing armed


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
    with _arm_lock:  # the computation and the arming as one step: threads call it concurrently
        _arm_now()


def _arm_now() -> None:
    if not _enabled:
        return
    import faulthandler  # loaded by ``enable``

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
