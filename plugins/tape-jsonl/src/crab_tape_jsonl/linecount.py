"""How many lines a tape has, cached beside it so counting a long tape only reads what is new.

The cache (``.<session id>.count``, ``"<bytes> <lines>"``) is a hint, never the truth: tapes only
grow, so a count for a prefix stays right; a cache that does not fit the tape is ignored and
rewritten, and deleting it only costs one full count.
"""

from __future__ import annotations

import os
from pathlib import Path

from crab_tape_jsonl.tapefile import CHUNK

CACHE_AFTER = 1 << 20
"""Bytes counted in one go before the result is worth caching (small tapes get no cache file)."""


def cache_path(tape: Path) -> Path:
    return tape.with_name(f".{tape.stem}.count")


def _read_cache(tape: Path) -> tuple[int, int]:
    try:
        size, lines = cache_path(tape).read_text(encoding="ascii").split()
        return int(size), int(lines)
    except (OSError, ValueError):
        return 0, 0


def _write_cache(tape: Path, size: int, lines: int) -> None:
    target = cache_path(tape)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(f"{size} {lines}\n", encoding="ascii")
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)


def count_newlines(fd: int, start: int, end: int) -> int:
    count = 0
    pos = start
    while pos < end:
        chunk = os.pread(fd, min(CHUNK * 16, end - pos), pos)
        if not chunk:
            break
        count += chunk.count(b"\n")
        pos += len(chunk)
    return count


def count_lines(tape: Path, fd: int, end: int) -> int:
    """Newlines in the first ``end`` bytes of the open tape ``fd``."""
    size, lines = _read_cache(tape)
    if size > end:
        size, lines = 0, 0
    lines += count_newlines(fd, size, end)
    if end - size >= CACHE_AFTER:
        _write_cache(tape, end, lines)
    return lines
