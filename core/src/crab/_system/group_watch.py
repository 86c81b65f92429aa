"""What crab started ends even when crab is killed outright (``kill -9``, the OOM killer, the
watchdog's ``_exit``): a watcher process ends the groups still listed once crab's pipe closes.
Private; ``crab.processes.track``/``untrack`` keep it told (docs/security.md)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from typing import IO

GRACE = 0.5

WATCHER = r"""
import os, signal, sys, time
groups = set()
for line in sys.stdin:
    word = line.strip()
    if word.startswith("-"):
        groups.discard(word[1:])
    elif word.isdigit():
        groups.add(word)
for sig in (signal.SIGTERM, signal.SIGKILL):
    for group in list(groups):
        try:
            os.killpg(int(group), sig)
        except OSError:
            groups.discard(group)
    if not groups:
        break
    time.sleep(float(sys.argv[1]))
"""

_lock = threading.Lock()
_groups: set[int] = set()
_watcher: subprocess.Popen[bytes] | None = None


def _send(line: str) -> bool:
    pipe: IO[bytes] | None = _watcher.stdin if _watcher is not None else None
    if pipe is None:
        return False
    try:
        pipe.write(line.encode() + b"\n")
        pipe.flush()
    except (BrokenPipeError, OSError, ValueError):
        return False
    return True


def _start() -> None:
    # One small watcher for the first tracked start, in its own session so Ctrl-C at the terminal
    # does not reach it; it reads the running groups from a pipe and, when the pipe closes (crab
    # is gone, however it went), ends those still listed: SIGTERM, then SIGKILL after GRACE. A
    # process that moved out of its group (setsid) is beyond it; crab's exit paths find it by tag.
    global _watcher
    with contextlib.suppress(OSError):
        _watcher = subprocess.Popen(
            [sys.executable, "-I", "-c", WATCHER, str(GRACE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        for group in _groups:
            _send(str(group))


def watch(pgid: int) -> None:
    """Have group ``pgid`` ended should crab die without ending it."""
    with _lock:
        _groups.add(pgid)
        if not _send(str(pgid)):  # no watcher yet, or it died: a new one, told every group
            _start()


def forget(pgid: int) -> None:
    """Group ``pgid`` is over: the watcher must not signal that id again."""
    with _lock:
        _groups.discard(pgid)
        _send(f"-{pgid}")
