"""read: numbered lines within 2,000 lines / 50 KB, cut on line and UTF-8 boundaries, clear refusals."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from crab import ToolContext, ToolResult
from crab.testing import make_png
from crab.tools import run_tool
from crab_tools_basic.registry import build_tools

GIF = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,"
    b"\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)
JPEG_HEAD = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8L\r\x00\x00\x00/\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"


def test_numbered_lines_without_line_endings_or_bom(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "a.txt").write_bytes(b"\xef\xbb\xbffirst\r\nsecond\n\nlast")
    assert call("read", path="a.txt").content == "     1\tfirst\n     2\tsecond\n     3\t\n     4\tlast"


def test_line_limit_keeps_the_head_and_says_how_to_read_on(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, 5001)))
    content = call("read", path="big.txt").content
    lines = content.split("\n")
    assert lines[0] == "     1\trow 1"
    assert lines[1999] == "  2000\trow 2000"
    assert lines[2000] == "[showing lines 1-2000 of 5000 (2000 line limit); use offset=2001 to read on]"
    follow = call("read", path="big.txt", offset=2001, limit=3).content
    assert follow == (
        "  2001\trow 2001\n  2002\trow 2002\n  2003\trow 2003\n"
        "[showing lines 2001-2003 of 5000; use offset=2004 to read on]"
    )


def test_byte_limit_cuts_on_a_line_boundary(workspace: Path, call: Callable[..., ToolResult]) -> None:
    line = "é" * 99 + "\n"  # 199 bytes per line: 50 KB is reached long before 2,000 lines
    (workspace / "wide.txt").write_text(line * 1000)
    content = call("read", path="wide.txt").content
    body, note = content.rsplit("\n", 1)
    assert len(body.encode()) <= 50_000
    assert all(row.endswith("é" * 99) for row in body.split("\n"))
    shown = len(body.split("\n"))
    assert note == f"[showing lines 1-{shown} of 1000 (50 KB limit); use offset={shown + 1} to read on]"


def test_single_huge_line_is_cut_inside_on_a_character_boundary(
    workspace: Path, call: Callable[..., ToolResult]
) -> None:
    (workspace / "min.js").write_text("日" * 40_000 + "\nnext\n")
    content = call("read", path="min.js").content
    body, note = content.rsplit("\n", 1)
    assert len(body.encode()) <= 50_000
    assert body.startswith("     1\t日")
    assert set(body[7:]) == {"日"}  # no broken character at the cut
    assert note == (
        "[line 1 is longer than 50 KB and was cut; showing lines 1-1 of 2 (50 KB limit); use offset=2 to read on]"
    )


def test_offset_past_the_end_is_an_error(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "a.txt").write_text("one\n")
    result = call("read", path="a.txt", offset=5)
    assert result.is_error
    assert "has 1 lines" in result.content


def test_binary_files_folders_and_missing_files_are_refused(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "data.bin").write_bytes(b"\x00\x01\x02 not an image\x00")
    (workspace / "dir").mkdir()
    assert "binary file" in call("read", path="data.bin").content
    assert "is a folder" in call("read", path="dir").content
    assert "does not exist" in call("read", path="missing.txt").content
    os.mkfifo(workspace / "pipe")
    assert "not a regular file" in call("read", path="pipe").content  # and does not hang


def _reading(path: Path) -> bool:
    """Whether this process has ``path`` open."""
    folder = Path("/proc/self/fd")
    for fd in os.listdir(folder):
        with contextlib.suppress(OSError):
            if os.readlink(folder / fd) == str(path):
                return True
    return False


def test_a_read_given_up_stops_reading_the_file(workspace: Path, ctx: ToolContext) -> None:
    # A text head on a 1 TB sparse file: the whole file is hashed for the read gate, which takes
    # minutes. Once the call is given up (its timeout, an abort), its thread stops at the next
    # chunk and closes the file, rather than hashing on in the background after the call ended.
    big = workspace / "big.txt"
    with big.open("wb") as handle:
        handle.write(b"line\n" * 2000)
        handle.truncate(1 << 40)
    read = {t.name: t for t in build_tools({})}["read"]

    async def give_up() -> None:
        task = asyncio.ensure_future(run_tool(read, {"path": "big.txt"}, ctx))
        deadline = time.monotonic() + 60
        while not _reading(big) and not task.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert _reading(big), "the read never opened the file"
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(give_up())
    assert ctx.cancelled.is_set()
    deadline = time.monotonic() + 60
    while _reading(big) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _reading(big), "the read's thread still reads the file after the call was given up"


def test_empty_file(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "empty").write_bytes(b"")
    assert call("read", path="empty").content == "(empty file)"


def test_invalid_utf8_is_shown_with_replacement_characters(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    assert call("read", path="latin1.txt").content == "     1\tcaf\ufffd"


def test_unicode_line_separators_do_not_shift_numbers(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "ff.txt").write_text("a\fb\u2028c\nd\n")
    assert call("read", path="ff.txt").content == "     1\ta\fb\u2028c\n     2\td"


@pytest.mark.parametrize(
    ("name", "data", "media_type"),
    [
        ("shot.png", make_png(4, 3), "image/png"),
        ("photo.jpg", JPEG_HEAD + b"\0" * 64, "image/jpeg"),
        ("anim.gif", GIF, "image/gif"),
        ("pic.webp", WEBP, "image/webp"),
        ("no-extension", make_png(1, 1), "image/png"),  # known by its magic bytes, not its name
        ("named.txt", GIF, "image/gif"),
    ],
)
def test_images_come_back_as_images(
    workspace: Path, call: Callable[..., ToolResult], name: str, data: bytes, media_type: str
) -> None:
    (workspace / name).write_bytes(data)
    result = call("read", path=name)
    assert not result.is_error
    assert [(i.media_type, i.data) for i in result.images] == [(media_type, data)]
    assert result.content.startswith(f"{name}: image ({media_type}, ")


def test_a_png_named_file_that_is_no_image_is_refused_as_binary(
    workspace: Path, call: Callable[..., ToolResult]
) -> None:
    (workspace / "fake.png").write_bytes(b"\x00\x00 NUL bytes but no PNG signature")
    result = call("read", path="fake.png")
    assert result.images == () and "binary file" in result.content
