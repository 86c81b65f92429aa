"""bash's output logs: captured with a cap (head and tail kept), redacted, private, expiring.

A command's output is held in memory while it runs (at most ``HEAD_BYTES`` + ``TAIL_BYTES``
plus one read), so a flood costs a bounded amount of memory and disk whatever its length. The
log is written once, after the command, with every secret crab knows masked — including a
secret cut in two where the middle of the output was dropped. Logs live in one folder per
session under a per-user folder of mode 0700, and go after ``bash_log_retention_days``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crab import ToolError
from crab.secrets import REDACTED, Redactor

HEAD_BYTES = 1 << 20
TAIL_BYTES = 4 << 20
MIN_PARTIAL = 4
"""Shortest piece of a secret masked where the cut falls inside it."""
SECONDS_PER_DAY = 86_400.0


@dataclass
class Capture:
    """Output as it arrives: the first ``head_limit`` bytes, the last ``tail_limit``, and counts."""

    head_limit: int = HEAD_BYTES
    tail_limit: int = TAIL_BYTES
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0
    lines: int = 0
    frozen: bool = False

    def feed(self, data: bytes) -> None:
        if self.frozen:
            return  # a background child still writing after the call ended: dropped
        self.total += len(data)
        self.lines += data.count(b"\n")
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            # Trim in bulk: keeps the cost per byte constant under a flood.
            if len(self.tail) > 2 * self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def freeze(self) -> None:
        self.frozen = True
        if len(self.tail) > self.tail_limit:
            del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def dropped(self) -> int:
        """Bytes of output between the head and the tail that were not kept."""
        return self.total - len(self.head) - min(len(self.tail), self.tail_limit)


def _scrub_edges(head: str, tail: str, secrets: Sequence[str]) -> tuple[str, str]:
    """Mask a secret's start at the end of ``head`` and its end at the start of ``tail``."""
    for secret in secrets:
        for size in range(len(secret) - 1, MIN_PARTIAL - 1, -1):
            if head.endswith(secret[:size]):
                head = head[:-size] + REDACTED
                break
        for size in range(len(secret) - 1, MIN_PARTIAL - 1, -1):
            if tail.startswith(secret[-size:]):
                tail = REDACTED + tail[size:]
                break
    return head, tail


def render(capture: Capture, secrets: Sequence[str]) -> bytes:
    """The log's bytes: the output (or its head, a line saying what was cut, and its tail), redacted."""
    redactor = Redactor(secrets)
    capture.freeze()
    if capture.dropped <= 0:
        whole = bytes(capture.head + capture.tail).decode("utf-8", "surrogateescape")
        return redactor.text(whole).encode("utf-8", "surrogateescape")
    head = redactor.text(bytes(capture.head).decode("utf-8", "surrogateescape"))
    tail = redactor.text(bytes(capture.tail).decode("utf-8", "surrogateescape"))
    head, tail = _scrub_edges(head, tail, redactor.secrets)
    kept_lines = capture.head.count(b"\n") + capture.tail.count(b"\n")
    note = (
        f"\n[crab: {capture.dropped} bytes ({capture.lines - kept_lines} lines) cut from the middle of this "
        f"output; the first {len(capture.head)} and last {len(capture.tail)} bytes are kept]\n"
    )
    return (head + note + tail).encode("utf-8", "surrogateescape")


def _own_folder(folder: Path, private: bool) -> Path:
    """Create ``folder`` (mode 0700) or check an existing one is this user's folder.

    ``private``: also take group and other access away from an existing one (a session's own
    folder). The base folder is left as it is: ``output_dir`` may name a folder of the user's.
    """
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise ToolError(f"{folder} is not a folder of this user; remove it or set output_dir")
    if private and stat.S_IMODE(info.st_mode) != 0o700:
        folder.chmod(0o700)
    return folder


def session_folder(base: Path, session_id: str) -> Path:
    """The one folder holding a session's logs (its name made safe); not created here."""
    return base / session_folder_name(session_id)


def session_folder_name(session_id: str) -> str:
    """The name of a session's log folder: its id made safe for a file name."""
    return _UNSAFE.sub("_", session_id)[:80].lstrip(".") or "session"


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def new_log_path(base: Path, session_id: str) -> Path:
    """A fresh, private (0600) log file for one command of one session."""
    where = _own_folder(session_folder(_own_folder(base, private=False), session_id), private=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        candidate = where / f"bash-{stamp}-{os.getpid()}-{n}.log"
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        os.close(fd)
        return candidate
    raise ToolError(f"could not create a log file in {where}")


def write_log(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def sweep(base: Path, days: float, keep: str, now: float | None = None) -> int:
    """Remove session log folders untouched for ``days`` (not ``keep``'s); returns how many went."""
    now = time.time() if now is None else now
    limit = now - days * SECONDS_PER_DAY
    keep_name = session_folder(base, keep).name
    removed = 0
    try:
        entries = list(os.scandir(base))
    except OSError:
        return 0
    for entry in entries:
        if entry.name == keep_name or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            newest = max((e.stat(follow_symlinks=False).st_mtime for e in os.scandir(entry.path)), default=0.0)
            newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
        except OSError:
            continue
        if newest < limit:
            with contextlib.suppress(OSError):
                shutil.rmtree(entry.path)
                removed += 1
    return removed
