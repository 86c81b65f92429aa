"""The ``read`` and ``write`` tools: numbered, budgeted reads and gated, atomic writes (whose
result carries the diff, and whose preview computes it without writing).

``read`` gives a PNG, JPEG, GIF or WebP file (known by its magic bytes, whatever its name) back as
an image the model sees; other binary files are refused. A file of at most ``INLINE_MAX`` bytes on
a local disk is read on the event loop's thread (``crab.tools.local_file_io`` says when that
cannot block); anything else in a worker thread.

Both open files through ``anchored``, so a folder swapped for a symlink after the check is refused.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, BinaryIO

from crab import ToolContext, ToolError, ToolResult, tool
from crab.events import FileDiff
from crab.messages import ImagePart, sniff_image
from crab.tools import OutputLimit, local_file_io, run_blocking
from crab.tools import truncate_output as truncate

from crab_tools_basic import anchored, read_gate
from crab_tools_basic.anchored import Parent
from crab_tools_basic.diffs import MAX_DIFF_INPUT, file_diff, too_large
from crab_tools_basic.oserrors import os_errors
from crab_tools_basic.text import BOM, SNIFF_BYTES, looks_binary
from crab_tools_basic.workspace import settings_of, workspace_of

READ_LIMIT = OutputLimit(lines=2000, bytes=50_000, keep="head")
IMAGE_READ_LIMIT = 50 * 1024 * 1024
"""The largest image file read reads into memory; the loop's [crab] max_image_bytes caps what is kept."""


@dataclass(frozen=True, slots=True)
class Window:
    """A slice of a text file as the model sees it, plus what the read gate needs."""

    text: str
    total_lines: int
    sha256: str
    mtime_ns: int
    image: ImagePart | None = None


INLINE_MAX = 256 * 1024
"""The largest file ``read`` reads on the event loop's thread (a few hundred microseconds at most)."""


class NotInline(Exception):
    """Raised by an inline read that met what only a worker thread may read; nothing was shown."""


class Missing(ToolError):
    """The file to open does not exist (``write`` then creates it)."""


def open_existing(
    parent: Parent, on_folder: str = "use ls to list it", *, buffered: bool = True
) -> tuple[io.BufferedReader | io.FileIO, os.stat_result]:
    """``parent.name`` opened for reading, with its stat, if it is a regular file; else a ``ToolError``.

    The checks run on the opened descriptor, so they are about the file that will be read.
    ``buffered=False``: a raw file, each ``read`` one system call (a read of a whole small file
    needs no buffer: making one costs more than the read).
    """
    try:
        # O_NONBLOCK: a FIFO in the file's place must not hang the open; the check below refuses it.
        fd = anchored.open_entry(parent, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise Missing(f"{parent.display} does not exist") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):
            return (os.fdopen(fd, "rb") if buffered else io.FileIO(fd, "r")), info
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{parent.display} is a folder, not a file: {on_folder}")
    # A FIFO or device would block or never end.
    raise ToolError(f"{parent.display} is not a regular file")


def refuse_hardlinked(handle: BinaryIO, display: str, allow: bool, info: os.stat_result | None = None) -> None:
    """Refuse an open regular file that has other hard links, unless ``allow``.

    A hard link inside the workspace can be the same file as one outside it, and no path check
    can tell. Checked on the open descriptor, so a link made after any earlier look still counts;
    ``info``: that descriptor's ``fstat``, when the caller took it after opening.
    """
    if allow:
        return
    if info is None:
        info = os.fstat(handle.fileno())
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        raise ToolError(
            f"{display} has {info.st_nlink} hard links, so it may be a file outside the workspace; crab will not "
            "read or change it (to allow this, set [plugins.tools-basic] allow_hardlinks = true in your user config)"
        )


def read_window(
    parent: Parent,
    offset: int = 1,
    limit: int | None = None,
    allow_hardlinks: bool = True,
    cancelled: threading.Event | None = None,
    inline: bool = False,
) -> Window:
    """Lines ``offset``.. of the file ``parent.name``, numbered, within 2,000 lines / 50 KB (head kept).

    Line numbers count ``\\n`` only, as an editor does; a trailing ``\\r`` and a UTF-8 BOM are
    not shown. The whole file is hashed on the way through so the read gate covers it; once
    ``cancelled`` is set (the call timed out or was aborted) the reading stops at the next chunk.
    ``inline`` (on the event loop's thread): anything but a regular file of at most
    ``INLINE_MAX`` bytes, there and as read, raises ``NotInline`` before it can block or take long.
    """
    if offset < 1:
        raise ToolError("offset is the 1-based line to start from; it must be 1 or more")
    if limit is not None and limit < 1:
        raise ToolError("limit must be 1 or more lines")
    display = parent.display
    if inline:
        # Looked at before the open: opening a device calls its driver, O_NONBLOCK or not.
        try:
            there = os.stat(parent.name, dir_fd=parent.fd, follow_symlinks=False)
        except FileNotFoundError:
            raise Missing(f"{display} does not exist") from None
        if stat.S_ISLNK(there.st_mode):  # what the open (O_NOFOLLOW) would refuse, in the same words
            raise anchored.swapped(display, parent.name)
        if not stat.S_ISREG(there.st_mode) or there.st_size > INLINE_MAX:
            raise NotInline
    handle, info = open_existing(parent, buffered=not inline)
    if inline and info.st_size > INLINE_MAX:
        handle.close()
        raise NotInline
    wanted = min(limit, READ_LIMIT.lines) if limit is not None else READ_LIMIT.lines
    with handle:
        refuse_hardlinked(handle, display, allow_hardlinks, info)
        # Inline, the whole file at once (and one byte more, to see it grew): one read, one hash update.
        head = handle.read(max(SNIFF_BYTES, info.st_size + 1) if inline else SNIFF_BYTES)
        if inline and len(head) < info.st_size:
            raise NotInline  # a short raw read, or the file shrank: the thread's buffered read takes either
        if sniff_image(head) is not None:
            return _image_window(handle, head, display, info, INLINE_MAX if inline else IMAGE_READ_LIMIT)
        if looks_binary(head):
            raise ToolError(f"{display} is a binary file ({info.st_size} bytes); read shows text files only")
        shown, total, digest = _scan(handle, head, offset, wanted, cancelled, INLINE_MAX if inline else None)
    if total == 0:
        return Window("(empty file)", 0, digest, info.st_mtime_ns)
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {display}, which has {total} lines")
    body = "".join(shown[:wanted])
    text, cut = truncate(body, OutputLimit(lines=wanted, bytes=READ_LIMIT.bytes, keep="head"))
    notes: list[str] = []
    if cut is not None and "\n" not in text:
        notes.append(f"line {offset} is longer than {READ_LIMIT.bytes // 1000} KB and was cut")
        last_shown = offset
    else:
        # truncate() also breaks lines at \f, \u2028 and friends: drop a partly kept line.
        text = text[: text.rfind("\n") + 1]
        last_shown = offset + text.count("\n") - 1
    if last_shown < total:
        reason = ""
        if cut is not None and cut.limit == "bytes":
            reason = f" ({READ_LIMIT.bytes // 1000} KB limit)"
        elif limit is None or limit >= READ_LIMIT.lines:
            reason = f" ({READ_LIMIT.lines} line limit)"
        notes.append(f"showing lines {offset}-{last_shown} of {total}{reason}; use offset={last_shown + 1} to read on")
    text = text.rstrip("\n")
    if notes:
        text += "\n[" + "; ".join(notes) + "]"
    return Window(text, total, digest, info.st_mtime_ns)


SCAN_CHUNK = 1 << 16
"""Bytes read (and hashed) at a time: the file is hashed whole, in C, a chunk at a time."""
LINE_KEEP = READ_LIMIT.bytes + 8
"""The most bytes of one line kept to show: a longer line is cut at READ_LIMIT.bytes anyway (the
8 more let the cut fall after a whole character), so a huge one-line file is never held whole."""


def _scan(
    handle: BinaryIO,
    head: bytes,
    offset: int,
    wanted: int,
    cancelled: threading.Event | None = None,
    most: int | None = None,
) -> tuple[list[str], int, str]:
    """The numbered lines from ``offset`` on (one beyond each budget, so ``truncate`` can see and
    report the cut), the file's line count and the sha256 of all its bytes.

    ``head`` is what was read of ``handle`` already. Lines are split on ``\\n`` only, and only
    those the window may show: the rest is hashed and its newlines counted (in C), never split.
    ``most``: a file that turns out longer (it grew since its size was seen) raises ``NotInline``.
    """
    digest = hashlib.sha256()
    seen = 0
    shown: list[str] = []
    shown_bytes = 0
    line = 1  # the line the next byte read belongs to
    carry = b""  # the beginning of line ``line``, read so far, when it is to be shown
    collecting = True
    last = b""
    chunk = head
    while chunk:
        seen += len(chunk)
        if most is not None and seen > most:
            raise NotInline
        digest.update(chunk)
        last = chunk
        found = -1
        if collecting and line < offset and most is not None:
            # Inline, the whole file is this one chunk: the newlines before the window are counted once.
            found, before = _find_after(chunk, offset - line)
            newlines = before if found < 0 else before + chunk.count(b"\n", found)
        else:
            newlines = chunk.count(b"\n")
        if collecting and line + newlines >= offset:
            if line < offset:  # the window starts in this chunk: no line before it is split
                start = found if found >= 0 else _after_newlines(chunk, offset - line)
                number, carry = offset, b""
            else:
                start, number = 0, line
            # At most the lines the budget may still take, plus the rest in one piece.
            pieces = chunk[start:].split(b"\n", wanted + 1 - len(shown))
            pieces[0] = carry + pieces[0]
            for raw in pieces[:-1]:
                if len(shown) > wanted or shown_bytes > READ_LIMIT.bytes:
                    break
                numbered = _numbered(number, raw)
                shown.append(numbered)
                shown_bytes += len(numbered.encode("utf-8"))
                number += 1
            collecting = len(shown) <= wanted and shown_bytes <= READ_LIMIT.bytes
            carry = pieces[-1][:LINE_KEEP] if collecting else b""
        line += newlines
        if cancelled is not None and cancelled.is_set():
            # The call was given up: its thread cannot be stopped, so it stops itself rather than
            # hash the rest of a huge file in the background.
            raise ToolError(f"stopped reading after {line - 1} lines: the call was stopped")
        chunk = handle.read(SCAN_CHUNK)
    # A last line without its newline counts (and shows) like any other.
    total = line if last and not last.endswith(b"\n") else line - 1
    if collecting and total == line and line >= offset and len(shown) <= wanted and shown_bytes <= READ_LIMIT.bytes:
        shown.append(_numbered(line, carry))
    return shown, total, digest.hexdigest()


SKIP_BLOCK = 2048
"""Bytes counted at a time while looking for the window's first line: only the block it starts in is split."""


def _after_newlines(chunk: bytes, need: int) -> int:
    """Where the text after the ``need``-th newline of ``chunk`` (which has that many) starts."""
    return _find_after(chunk, need)[0]


def _find_after(chunk: bytes, need: int) -> tuple[int, int]:
    """``(where the text after the need-th newline of chunk starts, need)``; ``(-1, its newlines)``
    when ``chunk`` has fewer."""
    position, seen, size = 0, 0, len(chunk)
    while position < size:
        end = min(position + SKIP_BLOCK, size)
        found = chunk.count(b"\n", position, end)
        if seen + found >= need:
            rest = chunk[position:end].split(b"\n", need - seen)[-1]
            return end - len(rest), need
        seen += found
        position = end
    return -1, seen


def _numbered(number: int, raw: bytes) -> str:
    """Line ``number`` as read shows it: no BOM (line 1), no line ending, its number and a tab."""
    if number == 1 and raw.startswith(BOM):
        raw = raw[len(BOM) :]
    line = raw[:LINE_KEEP].decode("utf-8", "replace").removesuffix("\r")
    return f"{number:>6}\t{line}\n"


def _image_window(
    handle: BinaryIO, head: bytes, display: str, info: os.stat_result, most: int = IMAGE_READ_LIMIT
) -> Window:
    """The image file open in ``handle`` (``head`` already read), bounded by ``IMAGE_READ_LIMIT``
    (a smaller ``most``: inline, and a longer file raises ``NotInline``)."""
    if info.st_size > IMAGE_READ_LIMIT:
        raise ToolError(f"{display} is an image of {info.st_size} bytes, too large to read (limit {IMAGE_READ_LIMIT})")
    data = head + handle.read(most + 1 - len(head))
    if len(data) > most:
        if most < IMAGE_READ_LIMIT:
            raise NotInline
        raise ToolError(f"{display} grew past {IMAGE_READ_LIMIT} bytes while it was read")
    try:
        image = ImagePart.from_bytes(data)
    except ValueError as exc:
        raise ToolError(f"{display}: {exc}") from None
    text = f"{display}: image ({image.describe()})"
    return Window(text, 0, image.sha256, info.st_mtime_ns, image)


@tool(output_limit=None)
async def read(
    path: Annotated[str, "file to read"],
    ctx: ToolContext,
    offset: Annotated[int | None, "first line to show, 1-based"] = None,
    limit: Annotated[int | None, "most lines to show"] = None,
) -> str | ToolResult:
    """Read a text file; each line is shown after its number and a tab, a prefix that is not in the file.

    Shows at most 2,000 lines or 50 KB from `offset` and says how to read on. PNG, JPEG, GIF
    and WebP images come back as images you can see; other binary files and folders (use ls)
    are refused.
    """
    # A small file on a local disk is read here, on the loop: a worker thread costs such a read
    # more than the read. Decided before any call on a path (crab.tools.local_file_io), and
    # anything else (a network or FUSE mount anywhere, a FIFO, a device, a big file) in a thread.
    if local_file_io(str(ctx.workspace)):
        try:
            return read_file(ctx, path, offset, limit, inline=True)
        except NotInline:
            pass
    return await run_blocking(lambda: read_file(ctx, path, offset, limit), ctx)


def read_file(
    ctx: ToolContext, path: str, offset: int | None, limit: int | None, *, inline: bool = False
) -> str | ToolResult:
    """The ``read`` tool's work; ``inline`` (on the loop): ``NotInline`` for a file on a mount
    ``local_file_io`` does not vouch for, or one ``read_window`` will not read inline."""
    settings = settings_of(ctx)
    ws = workspace_of(ctx, settings)
    real = ws.resolve(path)
    if inline and not local_file_io(str(real)):
        raise NotInline
    display = ws.display(real)
    with os_errors(f"cannot read {display}"), anchored.parent_of(ws.scope_of(real), real, display) as parent:
        window = read_window(parent, offset or 1, limit, settings.allow_hardlinks, ctx.cancelled, inline)
    if window.image is not None:
        return ToolResult(window.text, images=(window.image,))
    read_gate.remember(ctx.state, real, window.sha256, window.mtime_ns)
    return window.text


def write_file(
    state: dict[str, Any], root: Path, real: Path, display: str, content: str, allow_hardlinks: bool = True
) -> ToolResult:
    """Create or overwrite ``real`` (inside ``root``) with ``content`` (UTF-8), gated and atomic.

    Returns a summary, with the change in its ``diffs``. Every folder on the way is opened from
    ``root`` without following a symlink.
    """
    try:
        data = content.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise ToolError("content contains characters that cannot be written as UTF-8 (lone surrogates)") from None
    with read_gate.path_lock(state, real), anchored.parent_of(root, real, display, create=True) as parent:
        info: os.stat_result | None = None
        before: bytes | None = None
        try:
            handle, info = open_existing(parent, on_folder="give a file path")
        except Missing:
            pass  # a new file
        else:
            with handle:
                refuse_hardlinked(handle, display, allow_hardlinks)
                if info.st_size + len(data) > MAX_DIFF_INPUT:  # no diff of it is shown: hashed, never held whole
                    digest = hashlib.file_digest(handle, "sha256").hexdigest()
                else:
                    before = handle.read()
                    digest = hashlib.sha256(before).hexdigest()
            read_gate.check(state, real, display, digest, info.st_mtime_ns)
        mode = stat.S_IMODE(info.st_mode) if info is not None else None
        mtime_ns = anchored.replace_entry(parent, data, mode)
        read_gate.remember(state, real, hashlib.sha256(data).hexdigest(), mtime_ns)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "overwrote" if info is not None else "created"
    summary = f"{verb} {display} ({len(data)} bytes, {lines} lines)"
    if info is not None and before is None:
        return ToolResult(summary, diffs=(too_large(display, info.st_size, len(data)),))
    return ToolResult(summary, diffs=(write_diff(display, before, data),))


def write_diff(display: str, before: bytes | None, data: bytes) -> FileDiff:
    """The change of a write: a diff from what was there (None: nothing)."""
    return file_diff(display, before, data)


def preview_write(arguments: dict[str, Any], ctx: ToolContext) -> list[FileDiff]:
    """The diff ``write`` would make with these arguments, nothing written or created (not even
    a folder); [] when the write would be refused anyway."""
    settings = settings_of(ctx)
    ws = workspace_of(ctx, settings)
    try:
        data = str(arguments["content"]).encode("utf-8", "surrogateescape")
        real = ws.resolve(arguments["path"], write=True)
        display = ws.display(real)
        before: bytes | None = None
        try:
            with anchored.parent_of(ws.scope_of(real), real, display) as parent:
                handle, info = open_existing(parent, on_folder="give a file path")
                with handle:
                    refuse_hardlinked(handle, display, settings.allow_hardlinks)
                    if info.st_size + len(data) > MAX_DIFF_INPUT:  # asked before the user's word: not read
                        return [too_large(display, info.st_size, len(data))]
                    before = handle.read()
        except (Missing, FileNotFoundError):
            before = None  # a new file
        except ToolError:
            if real.parent.is_dir():
                return []  # refused for a reason the call itself will give
            before = None  # a new file in folders the write will make
    except (ToolError, OSError, UnicodeEncodeError):
        return []
    return [write_diff(display, before, data)]


@tool(permission="write", output_limit=None, preview=preview_write)
def write(
    path: Annotated[str, "file to create or overwrite"],
    content: Annotated[str, "the whole file, every line written out (no '... rest unchanged ...' placeholders)"],
    ctx: ToolContext,
) -> ToolResult:
    """Create a file, or replace its whole content. Missing parent folders are created.

    To change part of an existing file, use edit. Overwriting needs a read of the file earlier
    in this session and no change on disk since (read it again if it changed). Do not create
    documentation files (README, notes) unless the user asks for them.
    """
    settings = settings_of(ctx)
    ws = workspace_of(ctx, settings)
    real = ws.resolve(path, write=True)
    with os_errors(f"cannot write {ws.display(real)}"):
        return write_file(ctx.state, ws.scope_of(real), real, ws.display(real), content, settings.allow_hardlinks)
