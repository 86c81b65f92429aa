"""Waking an event loop when a signal arrives, so a Python-level signal handler (``asyncio.Runner``'s
Ctrl-C, the ``crab`` command's ``SignalGate``) runs at once instead of when the loop next wakes.

Python runs signal handlers in the main thread only, between two bytecodes. A loop blocked in
``epoll_wait`` runs none: the kernel may deliver a process-wide SIGINT to another thread (a sync
tool's), or it may arrive just before the main thread enters the wait, and then the handler waits
for the loop's next event, which, while a sync tool runs for minutes, is its end. ``asyncio``
closes that gap only for ``loop.add_signal_handler`` (it sets a wakeup fd); ``Runner`` and
handlers installed with ``signal.signal`` do not. ``waking`` sets one for the length of a run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio


@contextlib.contextmanager
def waking(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """While inside, every signal wakes ``loop``; a wakeup fd set before (another library's, a
    loop's own ``add_signal_handler``) still gets every byte and is set again after."""
    if threading.current_thread() is not threading.main_thread():
        yield  # set_wakeup_fd works in the main thread only, and only there do handlers run
        return
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    try:
        previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except (ValueError, OSError):  # a platform or an embedding that refuses it: nothing to do
        reader.close()
        writer.close()
        yield
        return

    def drain() -> None:
        try:
            data = reader.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        if previous != -1 and data:
            with contextlib.suppress(OSError):  # theirs is full or closed: as without us
                os.write(previous, data)

    try:
        loop.add_reader(reader.fileno(), drain)
    except NotImplementedError:  # a loop without readers (Windows' proactor): as without us
        watching = False
    else:
        watching = True
    try:
        yield
    finally:
        if watching:
            loop.remove_reader(reader.fileno())
        with contextlib.suppress(ValueError, OSError):
            signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()
