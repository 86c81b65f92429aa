"""The read gate: a file may be overwritten only after this session read it, unchanged since.

Records live in ``ctx.state`` (one dict per session) keyed on the resolved absolute path. A file
counts as unchanged when its content hash still matches what was read; the mtime alone is not
trusted because two writes within the filesystem's timestamp granularity share one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from crab import ToolError

STATE_KEY = "tools-basic.read-gate"
LOCKS_KEY = "tools-basic.path-locks"
_locks_guard = threading.Lock()


@dataclass(frozen=True, slots=True)
class FileRecord:
    """What the session last saw of a file: its mtime (ns) and the sha256 of its bytes."""

    mtime_ns: int
    sha256: str


def _records(state: dict[str, Any]) -> dict[str, FileRecord]:
    records = state.setdefault(STATE_KEY, {})
    assert isinstance(records, dict)
    return records


def remember(state: dict[str, Any], path: Path, digest: str, mtime_ns: int) -> None:
    """Record that the session now knows ``path`` as it is on disk (after a read, write or edit).

    Give the ``digest`` of the bytes the caller read or wrote, and the ``mtime_ns`` it saw on the
    open file before reading them: if the file changes in between, the next check sees a different
    hash. Nothing here opens ``path`` again: the callers opened it safely (``anchored``).
    """
    _records(state)[str(path)] = FileRecord(mtime_ns, digest)


def check(state: dict[str, Any], path: Path, display: str, digest: str, mtime_ns: int) -> None:
    """Raise ``ToolError`` unless ``path`` was read in this session and is unchanged since.

    ``digest`` is the sha256 of the file's current bytes and ``mtime_ns`` its current mtime, both
    from the caller's open file. A file whose mtime moved but whose content is the same passes
    and its record is refreshed.
    """
    record = _records(state).get(str(path))
    if record is None:
        raise ToolError(f"{display} exists but was not read in this session: read it first, then write or edit it")
    if digest != record.sha256:
        raise ToolError(f"{display} changed on disk since it was last read: read it again before changing it")
    if mtime_ns != record.mtime_ns:
        _records(state)[str(path)] = FileRecord(mtime_ns, digest)


def path_lock(state: dict[str, Any], path: Path) -> threading.Lock:
    """One lock per resolved path and session, so parallel writes and edits to a file take turns."""
    with _locks_guard:
        locks = state.setdefault(LOCKS_KEY, {})
        lock = locks.get(str(path))
        if lock is None:
            lock = locks[str(path)] = threading.Lock()
        return cast(threading.Lock, lock)
