"""The tape file format: a session header line, then one JSON entry per line; encoding and reading.

Reading never trusts the file: a line that does not parse (a torn write) is skipped with a
``TornLineWarning``, and a last line without its newline is treated as not yet written.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from crab import StoreError
from crab.storage import (
    INTERCHANGE_VERSION,
    SESSION_HEADER_KEY,
    Entry,
    SessionInfo,
    entry_from_dict,
    entry_to_dict,
    session_from_header,
    session_header,
)

CHUNK = 1 << 16


class TornLineWarning(UserWarning):
    """A line of a tape could not be read (usually a write cut short by a crash); it was skipped."""


def _dumps(obj: Mapping[str, Any]) -> bytes:
    # ensure_ascii=False keeps the tape readable by hand; surrogatepass lets a lone surrogate
    # (from undecodable tool output) round-trip instead of failing the append.
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"cannot store a payload that is not JSON: {exc}") from None
    return text.encode("utf-8", "surrogatepass") + b"\n"


def encode_header(info: SessionInfo) -> bytes:
    """The first line of a tape."""
    return _dumps(session_header(info))


def encode_entry(entry: Entry) -> bytes:
    """One entry line; the session id is the file's, so it is not repeated on every line."""
    return _dumps(entry_to_dict(entry))


def _loads(line: bytes) -> Any:
    return json.loads(line.decode("utf-8", "surrogatepass"))


def decode_header(line: bytes, where: str) -> SessionInfo:
    try:
        data = _loads(line)
        if isinstance(data, dict) and data.get(SESSION_HEADER_KEY, 0) > INTERCHANGE_VERSION:
            raise StoreError(
                f"{where}: tape format v{data[SESSION_HEADER_KEY]} is newer than this crab-tape-jsonl understands"
            )
        return session_from_header(data)
    except StoreError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"{where}: the first line is not a crab session header ({exc})") from None


def decode_entry(line: bytes, session_id: str) -> Entry | None:
    """The entry on ``line``, or None when the line is not a valid entry (caller warns)."""
    try:
        data = _loads(line)
    except ValueError:
        return None
    return entry_from_dict(data, session_id)


def warn_torn(path: os.PathLike[str] | str, offset: int, line: bytes) -> None:
    preview = line[:60].decode("utf-8", "replace")
    warnings.warn(
        f"{os.fspath(path)}: skipped an unreadable line at byte {offset} (a write cut short by a crash?): {preview!r}",
        TornLineWarning,
        stacklevel=3,
    )


def warn_unreadable_tape(path: os.PathLike[str] | str, reason: str) -> None:
    warnings.warn(f"{os.fspath(path)}: skipped, not a readable crab tape: {reason}", TornLineWarning, stacklevel=3)


def first_line(fd: int, end: int) -> bytes | None:
    """The header line, reading only as far as its newline (not a whole chunk of a long tape)."""
    want = 4096
    while True:
        data = os.pread(fd, min(want, end), 0)
        nl = data.find(b"\n")
        if nl >= 0:
            return data[:nl]
        if len(data) >= end:
            return None
        want *= 4


def read_lines(fd: int, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """Complete lines (without the newline) between byte offsets ``start`` and ``end``, in order.

    Bytes after the last newline are not yielded: they are a write in flight or a torn tail.
    """
    pos = start
    pending = b""
    pending_at = start
    while pos < end:
        chunk = os.pread(fd, min(CHUNK * 16, end - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        data = pending + chunk
        cut = 0
        while True:
            nl = data.find(b"\n", cut)
            if nl < 0:
                break
            yield pending_at + cut, data[cut:nl]
            cut = nl + 1
        pending_at += cut
        pending = data[cut:]


def read_lines_backward(fd: int, end: int) -> Iterator[tuple[int, bytes]]:
    """Complete lines ending at or before ``end``, last first; used so reading the tail of a long
    tape costs what the tail holds, not the whole file."""
    if end <= 0:
        return
    tail_last = os.pread(fd, 1, end - 1)
    if tail_last != b"\n":
        # The unterminated tail is not a line yet; start at the newline before it.
        end = line_start(fd, end)
        if end <= 0:
            return
    # ``end`` now sits just past a newline. ``buffer`` holds bytes [buffer_at, buffer_at+len) of
    # the file; ``limit`` is where the not-yet-yielded part of it ends (the newline is excluded).
    buffer = b""
    buffer_at = end - 1
    limit = 0
    while True:
        nl = buffer.rfind(b"\n", 0, limit)
        if nl >= 0:
            yield buffer_at + nl + 1, buffer[nl + 1 : limit]
            limit = nl
            continue
        if buffer_at == 0:
            yield 0, buffer[:limit]
            return
        size = min(CHUNK, buffer_at)
        buffer_at -= size
        buffer = os.pread(fd, size, buffer_at) + buffer[:limit]
        limit += size


def line_start(fd: int, end: int) -> int:
    """Offset where the line holding byte ``end - 1`` starts: just past the newline before it."""
    pos = end
    while pos > 0:
        size = min(CHUNK, pos)
        pos -= size
        chunk = os.pread(fd, size, pos)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            return pos + nl + 1
    return 0
