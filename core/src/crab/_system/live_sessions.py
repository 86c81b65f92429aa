"""Whether another crab process may still be writing a session: a shared lock held while a turn
runs, which a resume tests before it stores stand-in results (``crab._loop.agent.Agent.resume``)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # no flock (Windows): no liveness is known, and resume repairs as before
    fcntl = None  # type: ignore[assignment]

WAIT = 10.0
"""How long a turn waits for a resume's repair (a few store calls) before it runs unmarked."""


def _lock_file(home: Path, session_id: str) -> int | None:
    """An empty file per session under ``$CRAB_HOME/live`` (named by a hash: any id is safe),
    never deleted: a file removed while another process waits on it would split the lock."""
    # surrogatepass: an id from a command line that is not UTF-8 still names one lock (and the
    # store then says there is no such session) instead of raising here.
    name = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    folder = home / "live"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Never through a symlink (the folder or the file): nothing is created outside CRAB_HOME.
        where = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None  # a read-only or missing home, or live/ not a folder: no liveness, as without flock
    try:
        # O_NONBLOCK: a FIFO put there never blocks the open.
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(f"{name}.lock", flags, 0o600, dir_fd=where)
    except OSError:
        return None
    finally:
        os.close(where)
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device put there is no lock of ours
        os.close(fd)
        return None
    return fd


@contextlib.asynccontextmanager
async def turn_running(home: Path, session_id: str) -> AsyncIterator[None]:
    """Hold ``session_id``'s shared lock while a turn runs (its calls are in flight). Released when
    the process dies however it dies, so a ``kill -9`` leaves nothing held. Never blocks the event
    loop: a resume in this very process may hold the lock across its awaits."""
    fd = _lock_file(home, session_id) if fcntl is not None else None
    if fd is None:
        yield
        return
    try:
        deadline = asyncio.get_running_loop().time() + WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.005)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def no_turn_running(home: Path, session_id: str) -> Iterator[bool]:
    """Yields True while holding ``session_id``'s lock alone: no turn of it runs anywhere on this
    machine, so a call the store holds no result for will get none (its process is gone). False
    when some process (this one included) is running a turn of it; True where liveness cannot be
    known."""
    fd = _lock_file(home, session_id) if fcntl is not None else None
    if fd is None:
        yield True
        return
    try:
        alone = True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            alone = False
        yield alone
    finally:
        os.close(fd)
