"""The read gate: write and edit need a prior read and no change on disk since."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from crab import ToolResult


def test_overwrite_without_read_is_refused(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "a.txt").write_text("original\n")
    result = call("write", path="a.txt", content="new\n")
    assert result.is_error
    assert "not read" in result.content
    assert (workspace / "a.txt").read_text() == "original\n"


def test_edit_without_read_is_refused(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "a.txt").write_text("original\n")
    result = call("edit", path="a.txt", old="original", new="changed")
    assert result.is_error
    assert "read it first" in result.content
    assert (workspace / "a.txt").read_text() == "original\n"


def test_change_on_disk_since_read_is_refused(workspace: Path, call: Callable[..., ToolResult]) -> None:
    target = workspace / "a.txt"
    target.write_text("one\n")
    assert not call("read", path="a.txt").is_error
    target.write_text("two\n")  # someone else edits the file, possibly within the same mtime tick
    for result in (
        call("write", path="a.txt", content="three\n"),
        call("edit", path="a.txt", old="two", new="three"),
    ):
        assert result.is_error
        assert "changed on disk" in result.content
    assert target.read_text() == "two\n"


def test_changed_and_restored_content_passes(workspace: Path, call: Callable[..., ToolResult]) -> None:
    target = workspace / "a.txt"
    target.write_text("same\n")
    assert not call("read", path="a.txt").is_error
    target.write_text("different\n")
    target.write_text("same\n")
    os.utime(target, ns=(1, 1))  # a new mtime, the same bytes
    result = call("edit", path="a.txt", old="same", new="edited")
    assert not result.is_error, result.content
    assert target.read_text() == "edited\n"


def test_partial_read_counts(workspace: Path, call: Callable[..., ToolResult]) -> None:
    target = workspace / "a.txt"
    target.write_text("".join(f"line {i}\n" for i in range(1, 101)))
    assert not call("read", path="a.txt", offset=50, limit=2).is_error
    assert not call("edit", path="a.txt", old="line 99\n", new="line ninety-nine\n").is_error
    assert "line ninety-nine\n" in target.read_text()


def test_own_writes_and_edits_refresh_the_record(workspace: Path, call: Callable[..., ToolResult]) -> None:
    assert not call("write", path="new.txt", content="a\n").is_error
    assert not call("write", path="new.txt", content="b\n").is_error
    assert not call("edit", path="new.txt", old="b", new="c").is_error
    assert not call("edit", path="new.txt", old="c", new="d").is_error
    assert (workspace / "new.txt").read_text() == "d\n"


def test_gate_is_per_session(workspace: Path, call: Callable[..., ToolResult], ctx: object) -> None:
    (workspace / "a.txt").write_text("x\n")
    assert not call("read", path="a.txt").is_error
    ctx.state.clear()  # type: ignore[attr-defined]  # a new session starts with empty state
    assert call("write", path="a.txt", content="y\n").is_error


def test_deleted_file_can_be_recreated(workspace: Path, call: Callable[..., ToolResult]) -> None:
    target = workspace / "a.txt"
    target.write_text("x\n")
    assert not call("read", path="a.txt").is_error
    target.unlink()
    assert not call("write", path="a.txt", content="fresh\n").is_error
    assert target.read_text() == "fresh\n"
