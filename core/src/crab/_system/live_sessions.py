"""Whether another crab process may still be writing a session: a shared lock held while a turn
runs, which a resume tests before it stores stand-in results (``crab._loop.agent.Agent.resume``)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import stat
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # no flock (Windows): no liveness is known, and resume repairs as before
    fcntl = None  # type: ignore[assignment]

WAIT = 10.0
"""How long a turn waits for a resume's repair (a few store calls) before it runs unmarked."""
_RETRIES = 100
"""Times a lock is taken again because the file it locked was removed meanwhile."""


@dataclass(frozen=True, slots=True)
class _Lock:
    """An open lock file of ``$CRAB_HOME/live`` and the folder it was opened in."""

    where: int
    name: str
    fd: int

    def current(self) -> bool:
        """Whether the path still names this file: a finished turn may have removed it meanwhile,
        and a lock on a removed file is nobody's."""
        try:
            named = os.stat(self.name, dir_fd=self.where, follow_symlinks=False)
        except OSError:
            return False
        mine = os.fstat(self.fd)
        return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)

    def remove(self) -> None:
        """Remove the file while holding it alone: a process waiting on it sees ``current`` turn
        False and locks the path's new file, so the lock never splits."""
        with contextlib.suppress(OSError):
            os.unlink(self.name, dir_fd=self.where)

    def close(self) -> None:
        os.close(self.fd)
        os.close(self.where)


def _open(home: Path | None, session_id: str) -> _Lock | None:
    """The session's lock file under ``$CRAB_HOME/live`` (named by a hash: any id is safe); it
    exists only while some turn or resume of the session holds it."""
    # surrogatepass: an id from a command line that is not UTF-8 still names one lock (and the
    # store then says there is no such session) instead of raising here.
    if home is None:
        return None
    name = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32] + ".lock"
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
        fd = os.open(name, flags, 0o600, dir_fd=where)
    except OSError:
        os.close(where)
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device put there is no lock of ours
        os.close(fd)
        os.close(where)
        return None
    return _Lock(where, name, fd)


def _lock(home: Path | None, session_id: str, how: int) -> tuple[_Lock | None, bool]:
    """The session's lock taken ``how`` without waiting: (lock, True) when held, (lock, False)
    when another holder keeps it, (None, True) where no liveness can be known here."""
    for _ in range(_RETRIES):
        lock = _open(home, session_id)
        if lock is None:
            return None, True
        try:
            fcntl.flock(lock.fd, how | fcntl.LOCK_NB)
        except BlockingIOError:
            return lock, False
        if lock.current():
            return lock, True
        lock.close()  # removed while it was being locked: lock the file the path names now
    return None, True


@contextlib.asynccontextmanager
async def turn_running(home: Path | None, session_id: str) -> AsyncIterator[None]:
    """Hold ``session_id``'s shared lock while a turn runs (its calls are in flight). Released when
    the process dies however it dies, so a ``kill -9`` leaves nothing held; the last turn to end
    removes the file. Never blocks the event loop: a resume in this very process may hold the
    lock across its awaits."""
    if fcntl is None:
        yield
        return
    deadline = asyncio.get_running_loop().time() + WAIT
    lock, held = _lock(home, session_id, fcntl.LOCK_SH)
    while lock is not None and not held and asyncio.get_running_loop().time() < deadline:
        lock.close()
        await asyncio.sleep(0.005)
        lock, held = _lock(home, session_id, fcntl.LOCK_SH)
    try:
        yield
    finally:
        if lock is not None:
            if held:
                try:
                    fcntl.flock(lock.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no other turn holds it
                except BlockingIOError:
                    pass
                else:
                    lock.remove()
            lock.close()


@contextlib.contextmanager
def no_turn_running(home: Path | None, session_id: str) -> Iterator[bool]:
    """Yields True while holding ``session_id``'s lock alone: no turn of it runs anywhere on this
    machine, so a call the store holds no result for will get none (its process is gone). False
    when some process (this one included) is running a turn of it; True where liveness cannot be
    known."""
    if fcntl is None:
        yield True
        return
    lock, alone = _lock(home, session_id, fcntl.LOCK_EX)
    try:
        yield alone
    finally:
        if lock is not None:
            if alone:
                lock.remove()
            lock.close()
