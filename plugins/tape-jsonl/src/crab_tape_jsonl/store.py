"""``TapeStore``: crab's ``Store`` contract on append-only JSONL tapes, one file per session.

Each append is one ``write`` of one line under an exclusive ``flock`` on the tape, so a killed
process loses at most the entry it was writing and two processes never interleave lines. The
methods are ``async`` because the contract is; the file work they do is short and local, so it
runs inline rather than on a thread (which would cost more than the write itself).
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from crab import StoreError
from crab.storage import ENTRY_TYPES, Entry, EntryType, SearchHit, SessionInfo, new_entry_id, new_session_id, search_hit

from crab_tape_jsonl.layout import SUFFIX, check_session_id, tape_path, workspace_folder
from crab_tape_jsonl.linecount import count_lines
from crab_tape_jsonl.tapefile import (
    decode_entry,
    decode_header,
    encode_entry,
    encode_header,
    first_line,
    line_start,
    read_lines,
    read_lines_backward,
    warn_torn,
    warn_unreadable_tape,
)

MAX_OPEN_TAPES = 64
"""Append descriptors kept open per store; older ones are closed (a long-lived process may write many)."""


@dataclass(frozen=True, slots=True)
class _Tail:
    """What this process knows about a tape's end after its own last write."""

    size: int
    last_id: str | None


def _is_handoff(entry: Entry) -> bool:
    return entry.type == "anchor" and bool(entry.payload.get("kind") == "handoff")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class TapeStore:
    """Sessions as ``<root>/<workspace folder>/<session id>.jsonl``, the images they name once
    each as ``<root>/blobs/<sha256>``; see docs/storage.md.

    ``fsync=True`` also survives power loss (each append waits for the disk); the default
    survives a killed process, which is what the ``Store`` contract asks.
    """

    name = "jsonl"

    def __init__(self, root: Path | str, *, fsync: bool = False) -> None:
        self.root = Path(root).expanduser()
        self.fsync = fsync
        self._paths: dict[str, Path] = {}
        self._fds: dict[str, int] = {}
        self._tails: dict[str, _Tail] = {}

    async def open(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the sessions folder {self.root}: {exc}") from None

    async def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self._tails.clear()

    # --- image blobs (crab.storage.BlobStore): <root>/blobs/<sha256> ------------------------------------

    async def put_blob(self, data: bytes) -> str:
        from crab_tape_jsonl import blobs

        return blobs.put_blob(self.root, data)

    async def get_blob(self, sha256: str) -> bytes | None:
        from crab_tape_jsonl import blobs

        return blobs.get_blob(self.root, sha256)

    # --- finding and reading tapes ----------------------------------------------------------

    def _find(self, session_id: str) -> Path:
        path = self._paths.get(session_id)
        if path is not None:
            return path
        check_session_id(session_id)
        for candidate in self.root.glob(f"*/{session_id}{SUFFIX}"):
            self._paths[session_id] = candidate
            return candidate
        raise StoreError(f"no session {session_id!r} in the JSONL store at {self.root}")

    @contextmanager
    def _reading(self, path: Path) -> Iterator[tuple[int, int]]:
        """An open descriptor and the end of its last complete line.

        The size is taken under a shared lock, so an unterminated tail seen then is torn (its
        writer died), not a write in flight. Bytes before that end never change afterwards.
        """
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                size = os.fstat(fd).st_size
                end = size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    start = line_start(fd, size)
                    warn_torn(path, start, os.pread(fd, min(size - start, 200), start))
                    end = start
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            yield fd, end
        finally:
            os.close(fd)

    @staticmethod
    def _header(fd: int, end: int, path: Path) -> SessionInfo:
        line = first_line(fd, end)
        if line is None:
            raise StoreError(f"{path}: the tape has no session header; it is not a crab session")
        return decode_header(line, str(path))

    @staticmethod
    def _entries_forward(fd: int, end: int, path: Path, session_id: str) -> Iterator[tuple[bytes, Entry]]:
        for offset, line in read_lines(fd, 0, end):
            if offset == 0:
                continue
            entry = decode_entry(line, session_id)
            if entry is None:
                warn_torn(path, offset, line)
                continue
            yield line, entry

    def _info(self, path: Path) -> SessionInfo:
        with self._reading(path) as (fd, end):
            info = self._header(fd, end, path)
            updated = info.created
            for offset, line in read_lines_backward(fd, end):
                if offset == 0:
                    break
                entry = decode_entry(line, info.id)
                if entry is not None:
                    updated = entry.time
                    break
            lines = count_lines(path, fd, end)
        return replace(info, updated=updated, entry_count=max(lines - 1, 0))

    # --- Store ------------------------------------------------------------------------------

    async def create_session(
        self, workspace: str, *, title: str | None = None, meta: Mapping[str, Any] | None = None
    ) -> SessionInfo:
        now = time.time()
        info = SessionInfo(id=new_session_id(), workspace=workspace, created=now, title=title, meta=dict(meta or {}))
        return self._write_new_tape(info, ())

    async def get_session(self, session_id: str) -> SessionInfo:
        return self._info(self._find(session_id))

    async def list_sessions(self, workspace: str | None = None, limit: int = 50) -> list[SessionInfo]:
        infos = [info for info in self._all_infos(workspace) if workspace is None or info.workspace == workspace]
        infos.sort(key=lambda i: (i.updated or i.created, i.id), reverse=True)
        return infos[:limit]

    def _tape_paths(self, workspace: str | None) -> list[Path]:
        if workspace is not None:
            folder = self.root / workspace_folder(workspace)
            return sorted(folder.glob(f"*{SUFFIX}"))
        return sorted(self.root.glob(f"*/*{SUFFIX}"))

    def _all_infos(self, workspace: str | None) -> Iterator[SessionInfo]:
        for path in self._tape_paths(workspace):
            try:
                info = self._info(path)
            except (StoreError, OSError) as exc:
                warn_unreadable_tape(path, str(exc))
                continue
            self._paths.setdefault(info.id, path)
            yield info

    async def append(self, session_id: str, type: EntryType, payload: Mapping[str, Any]) -> Entry:
        if type not in ENTRY_TYPES:
            raise StoreError(f"unknown entry type {type!r}")
        path = self._find(session_id)
        fd = self._append_fd(session_id, path)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            size = os.fstat(fd).st_size
            tail = self._tails.get(session_id)
            if tail is None or tail.size != size:
                # Another process (or a crash) changed the tape since our last write.
                tail = self._repair_tail(fd, size, path)
            entry = Entry(
                id=new_entry_id(),
                session_id=session_id,
                parent_id=tail.last_id,
                type=type,
                time=time.time(),
                payload=dict(payload),
            )
            line = encode_entry(entry)
            _write_all(fd, line)
            if self.fsync:
                os.fsync(fd)
            self._tails[session_id] = _Tail(tail.size + len(line), entry.id)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        return entry

    def _append_fd(self, session_id: str, path: Path) -> int:
        fd = self._fds.get(session_id)
        if fd is None:
            if len(self._fds) >= MAX_OPEN_TAPES:
                oldest = next(iter(self._fds))
                os.close(self._fds.pop(oldest))
                self._tails.pop(oldest, None)
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
            self._fds[session_id] = fd
        return fd

    def _repair_tail(self, fd: int, size: int, path: Path) -> _Tail:
        """Find the last entry's id; end a torn last line first so our line starts fresh."""
        if size and os.pread(fd, 1, size - 1) != b"\n":
            start = line_start(fd, size)
            warn_torn(path, start, os.pread(fd, min(size - start, 200), start))
            _write_all(fd, b"\n")
            size += 1
        for offset, line in read_lines_backward(fd, size):
            if offset == 0:
                break
            entry = decode_entry(line, "")
            if entry is not None:
                return _Tail(size, entry.id)
            warn_torn(path, offset, line)
        return _Tail(size, None)

    async def entries(self, session_id: str, *, since_handoff: bool = False) -> list[Entry]:
        path = self._find(session_id)
        with self._reading(path) as (fd, end):
            if not since_handoff:
                return [entry for _, entry in self._entries_forward(fd, end, path, session_id)]
            # Walk back from the end to the last handoff, so the cost is what follows it.
            found: list[Entry] = []
            for offset, line in read_lines_backward(fd, end):
                if offset == 0:
                    break
                entry = decode_entry(line, session_id)
                if entry is None:
                    warn_torn(path, offset, line)
                    continue
                found.append(entry)
                if _is_handoff(entry):
                    break
        found.reverse()
        return found

    async def search(
        self, query: str, *, session_id: str | None = None, workspace: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        words = [w.lower() for w in query.split() if w]
        if not words:
            return []
        # A word JSON would escape cannot be pre-checked against the raw line.
        plain = [w for w in words if not any(c in w for c in '"\\') and w.isprintable()]
        paths = [self._find(session_id)] if session_id is not None else self._tape_paths(workspace)
        hits: list[SearchHit] = []
        for path in paths:
            with self._reading(path) as (fd, end):
                info = self._header(fd, end, path)
                if workspace is not None and info.workspace != workspace:
                    continue
                for offset, line in read_lines(fd, 0, end):
                    if offset == 0:
                        continue
                    raw = line.decode("utf-8", "surrogatepass").lower()
                    if not all(w in raw for w in plain):
                        continue
                    entry = decode_entry(line, info.id)
                    if entry is None:
                        continue
                    hit = search_hit(entry, words)
                    if hit is not None:
                        hits.append(hit)
        hits.sort(key=lambda h: h.time, reverse=True)
        return hits[:limit]

    async def fork(self, session_id: str, at_entry: str | None = None) -> SessionInfo:
        path = self._find(session_id)
        copied: list[bytes] = []
        last: str | None = None
        with self._reading(path) as (fd, end):
            origin = self._header(fd, end, path)
            for line, entry in self._entries_forward(fd, end, path, session_id):
                copied.append(line + b"\n")
                last = entry.id
                if entry.id == at_entry:
                    break
            else:
                if at_entry is not None:
                    raise StoreError(f"no entry {at_entry!r} in session {session_id}")
        info = SessionInfo(
            id=new_session_id(),
            workspace=origin.workspace,
            created=time.time(),
            title=origin.title,
            forked_from=session_id,
            fork_entry=last,
            meta=origin.meta,
        )
        return self._write_new_tape(info, copied)

    def import_session(self, info: SessionInfo, entries: Iterable[Entry]) -> SessionInfo:
        """Write a whole session as given (ids, parents, times, header fields): ``crab sessions migrate``.

        Raises ``StoreError`` when a session with that id already exists here.
        """
        check_session_id(info.id)
        try:
            self._find(info.id)
        except StoreError:
            pass
        else:
            raise StoreError(f"session {info.id} already exists in the JSONL store at {self.root}")
        bare = replace(info, updated=None, entry_count=None, usage=None)
        return self._write_new_tape(bare, [encode_entry(e) for e in entries], keep_id=True)

    def _write_new_tape(self, info: SessionInfo, lines: Iterable[bytes], *, keep_id: bool = False) -> SessionInfo:
        """Write header and lines to a temporary file, then link it into place.

        A crash leaves either no session or a whole one; linking (unlike renaming) refuses to
        replace a tape that already has this id.
        """
        body = list(lines)
        folder = self.root / workspace_folder(info.workspace)
        folder.mkdir(parents=True, exist_ok=True)
        while True:
            target = tape_path(self.root, info.workspace, info.id)
            tmp = folder / f".{info.id}.{os.getpid()}.tmp"
            try:
                with open(tmp, "wb") as handle:
                    handle.write(encode_header(info))
                    handle.writelines(body)
                    handle.flush()
                    if self.fsync:
                        os.fsync(handle.fileno())
                os.link(tmp, target)
                break
            except FileExistsError:
                if keep_id:
                    raise StoreError(f"session {info.id} already exists in the JSONL store at {self.root}") from None
                info = replace(info, id=new_session_id())
            finally:
                tmp.unlink(missing_ok=True)
        self._paths[info.id] = target
        return self._info(target)
