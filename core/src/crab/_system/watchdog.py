"""What ends crab when it does not end by itself: the deadline after a signal (a daemon thread's
timer: one line, the command's exit code), and the last resort for a held interpreter (a sync tool
stuck in C code holding the GIL), ``faulthandler``'s GIL-free timer; only the CLI enables them
(docs/security.md)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable

STALL = 1.5
"""Seconds no Python thread may run while a sync tool runs; with TICK, within Ctrl-C's 2 s."""
TICK = 0.25
IDLE_TICKS = 120
"""Ticks (30 s) the heartbeat waits with no sync tool running before its thread ends: calls a
model reply apart reuse it rather than start a thread each (as ``crab._system.threads`` does)."""
GRACE = 0.6
"""Seconds past an ``exit_within`` deadline before the GIL-free timer ends the process (tracebacks,
exit 1): the deadline's own thread ends it first, with one line, whenever a Python thread can run."""
FLUSH = 0.1
"""Seconds the deadline gives stdout and stderr to flush (a pipe nobody reads must not hold it)."""

# Re-entrant: the signal handler (main thread) may arm while the main thread is inside _arm.
_lock = threading.RLock()
_arm_lock = threading.RLock()
_enabled = False
_threads: set[threading.Thread] = set()
_exit_at: float | None = None
_exit_code = 1
_last_words: Callable[[], str] = str
# An RLock underneath: ``exit_within`` runs in a signal handler, maybe while its own thread holds it.
_deadline = threading.Condition(threading.RLock())
_deadline_thread: threading.Thread | None = None
_ticking = False
ticks = 0
"""Heartbeats so far (tests wait on it)."""


def enable() -> None:
    """Let the watchdog end this process (the ``crab`` command does; libraries and tests do not)."""
    global _enabled, _deadline_thread
    import faulthandler  # noqa: F401  (loaded here, not at import: crab --help never needs it)

    _enabled = True
    with _deadline:
        if _deadline_thread is None:
            # Started here, never from ``exit_within``: a signal handler that starts a thread can
            # deadlock on threading's own lock, held by the code the signal interrupted.
            _deadline_thread = threading.Thread(target=_keep_deadline, name="crab-exit-deadline", daemon=True)
            _deadline_thread.start()


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


def exit_within(seconds: float, code: int, last_words: Callable[[], str]) -> None:
    """End the process with ``code`` unless it has exited by itself within ``seconds``.

    At the deadline a daemon thread calls ``last_words`` (it may end what must not outlive crab,
    and returns the line to print, or "" for none), writes that line to stderr and calls
    ``os._exit(code)``. That needs a Python thread to run; when none can (the GIL is held in C
    code), ``faulthandler`` ends the process ``GRACE`` seconds later (tracebacks, exit 1)."""
    global _exit_at, _exit_code, _last_words
    with _deadline:
        _exit_at = time.monotonic() + seconds
        _exit_code, _last_words = code, last_words
        _deadline.notify_all()
    _arm()


def clear_exit() -> None:
    """Withdraw ``exit_within`` (crab chat goes on after an interrupted turn)."""
    global _exit_at
    with _deadline:
        _exit_at = None
        _deadline.notify_all()
    _arm()


def _keep_deadline() -> None:
    # Waits (GIL released) until a deadline set by ``exit_within`` passes unwithdrawn.
    while True:
        with _deadline:
            at = _exit_at
            if at is None:
                _deadline.wait()
                continue
            left = at - time.monotonic()
            if left > 0:
                _deadline.wait(left)
                continue
            code, last_words = _exit_code, _last_words
        _end(code, last_words)


def _end(code: int, last_words: Callable[[], str]) -> None:
    try:
        line = last_words()
    except Exception as exc:  # the way out must not depend on it
        line = f"crab: ending ({type(exc).__name__} while ending)"
    # In a thread of their own: a stream whose reader stopped reading must not hold the exit.
    flushing = threading.Thread(target=_flush, name="crab-exit-flush", daemon=True)
    flushing.start()
    flushing.join(FLUSH)
    stream = sys.__stderr__
    if line and stream is not None:
        try:
            os.write(stream.fileno(), f"{line}\n".encode(errors="replace"))
        except (OSError, ValueError):
            pass
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass


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
    if _exit_at is not None:  # the deadline's own thread ends the process before, if it can run
        limits.append(max(0.05, _exit_at + GRACE - time.monotonic()))
    stream = sys.__stderr__
    if not limits or stream is None:
        faulthandler.cancel_dump_traceback_later()
        return
    try:
        faulthandler.dump_traceback_later(min(limits), exit=True, file=stream)
    except (ValueError, OSError, RuntimeError):
        faulthandler.cancel_dump_traceback_later()
