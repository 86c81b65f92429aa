"""read on the event loop's thread: only a small regular file on a mount table of local file
systems, with the same result, lines, cuts and read-gate hash as the worker thread's read."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import crab_tools_basic.files as files
import pytest
from crab import ToolContext, ToolResult
from crab.testing import make_png
from crab.tools import local_file_io, run_tool
from crab_tools_basic.registry import build_tools

LOCAL = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n23 22 0:5 / /proc rw shared:2 - proc proc rw\n"
FUSE = LOCAL + "40 22 0:50 / /mnt/remote rw shared:9 - fuse.sshfs me@host:/ rw\n"
NFS = LOCAL + "41 22 0:51 / /srv/share rw shared:10 - nfs4 host:/export rw\n"


@pytest.fixture
def ran_in(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread ids ``read``'s work ran in, one per call."""
    seen: list[int] = []
    work = files.read_file

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.get_ident())
        return work(*args, **kwargs)

    monkeypatch.setattr(files, "read_file", recording)
    return seen


def with_table(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """``read`` decides from the mount table ``text`` (a /proc/self/mountinfo) instead of this machine's."""
    monkeypatch.setattr(files, "local_file_io", lambda path: local_file_io(path, mountinfo=text))


def read(ctx: ToolContext, **arguments: Any) -> ToolResult:
    tool = {t.name: t for t in build_tools({})}["read"]
    return asyncio.run(run_tool(tool, arguments, ctx))


def test_a_small_file_on_local_mounts_is_read_on_the_loop_thread(
    workspace: Path, ctx: ToolContext, ran_in: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    with_table(monkeypatch, LOCAL)
    (workspace / "a.txt").write_text("one\ntwo\n")
    assert read(ctx, path="a.txt").content == "     1\tone\n     2\ttwo"
    assert ran_in == [threading.get_ident()]  # asyncio.run's loop runs in this thread


@pytest.mark.parametrize("table", [FUSE, NFS], ids=["fuse", "nfs"])
def test_a_network_or_fuse_mount_anywhere_sends_every_read_to_a_thread(
    workspace: Path, ctx: ToolContext, ran_in: list[int], monkeypatch: pytest.MonkeyPatch, table: str
) -> None:
    # The file is on ext4, but a symlink could lead a lookup into the other mount: no read is inline.
    with_table(monkeypatch, table)
    (workspace / "a.txt").write_text("one\n")
    assert read(ctx, path="a.txt").content == "     1\tone"
    assert len(ran_in) == 1 and ran_in[0] != threading.get_ident()


def test_a_big_file_is_read_in_a_thread(
    workspace: Path, ctx: ToolContext, ran_in: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    with_table(monkeypatch, LOCAL)
    (workspace / "big.txt").write_bytes(b"y" * 99 + b"\n" + b"z" * files.INLINE_MAX)
    assert read(ctx, path="big.txt", limit=1).content.startswith("     1\t" + "y" * 99 + "\n[showing lines 1-1 of 2")
    # Tried inline (no call on it but an lstat), then read in a worker.
    assert len(ran_in) == 2 and ran_in[1] != threading.get_ident()


def test_a_fifo_does_not_block_the_loop(
    workspace: Path, ctx: ToolContext, ran_in: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    with_table(monkeypatch, LOCAL)
    os.mkfifo(workspace / "pipe")
    result = read(ctx, path="pipe")
    assert result.is_error and "not a regular file" in result.content
    assert len(ran_in) == 2 and ran_in[1] != threading.get_ident()


def test_a_file_that_grows_past_the_bound_while_read_inline_is_read_again_in_a_thread(workspace: Path) -> None:
    # Its size was small when looked at, more is there when read: the scan stops and says so.
    (workspace / "a.txt").write_bytes(b"line\n" * 100)
    with (workspace / "a.txt").open("rb") as handle, pytest.raises(files.NotInline):
        files._scan(handle, handle.read(10), 1, 2000, None, most=200)


def test_a_file_that_shrinks_after_it_is_opened_reads_as_it_is_now(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its size was taken on the open descriptor; fewer bytes are there when read.
    with_table(monkeypatch, LOCAL)
    target = workspace / "a.txt"
    target.write_bytes(b"line\n" * 100)
    opening = files.open_existing

    def shrinking(*args: Any, **kwargs: Any) -> Any:
        opened = opening(*args, **kwargs)
        with target.open("r+b") as other:
            other.truncate(10)
        return opened

    monkeypatch.setattr(files, "open_existing", shrinking)
    assert read(ctx, path="a.txt").content == "     1\tline\n     2\tline"


CASES: dict[str, bytes] = {
    "plain.txt": b"".join(b"line %d\n" % i for i in range(1, 3001)),
    "crlf-bom.txt": b"\xef\xbb\xbffirst\r\nsecond\r\nlast",
    "long-line.txt": ("\u65e5" * 30_000 + "\nend\n").encode(),
    "empty.txt": b"",
    "no-newline.txt": b"only",
    "image.png": make_png(4, 3),
    "data.bin": b"\x00\x01\x02 not an image\x00",
    # The inline read takes the whole file at once: the binary sniff still looks at the first 8 KB only.
    "late-nul.bin": b"a\n" * 3000 + b"\x00",
    "nul-past-the-sniff.txt": b"a\n" * 5000 + b"\x00\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("arguments", [{}, {"offset": 2, "limit": 1}, {"offset": 2999}], ids=["whole", "slice", "tail"])
def test_inline_and_thread_reads_give_the_same_result_and_gate_record(
    workspace: Path, settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch, name: str, arguments: dict[str, Any]
) -> None:
    (workspace / name).write_bytes(CASES[name])
    outcomes: list[tuple[ToolResult, Any]] = []
    threads: list[bool] = []
    for table in (LOCAL, FUSE):
        with_table(monkeypatch, table)
        ctx = ToolContext(session_id="test-session", workspace=workspace, settings=settings)
        seen: list[int] = []
        work = files.read_file

        def recording(*args: Any, _work: Callable[..., Any] = work, _seen: list[int] = seen, **kwargs: Any) -> Any:
            _seen.append(threading.get_ident())
            return _work(*args, **kwargs)

        monkeypatch.setattr(files, "read_file", recording)
        outcomes.append((read(ctx, path=name, **arguments), dict(ctx.state)))
        monkeypatch.setattr(files, "read_file", work)
        threads.append(seen[-1] == threading.get_ident())
    assert threads == [True, False]
    (inline, inline_state), (threaded, threaded_state) = outcomes
    assert inline == threaded
    assert inline_state == threaded_state  # the read gate's sha256 and mtime: edit's stale check
