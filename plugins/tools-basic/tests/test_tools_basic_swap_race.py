"""A folder swapped for a symlink between the workspace check and the open is refused.

The race is made deterministic: ``Workspace.resolve`` is wrapped so the swap lands right after
the check passed, which is the moment a racing process needs to hit.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from crab import ToolResult
from crab_tools_basic.workspace import Workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@pytest.fixture
def swap_after_check(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, Path], None]:
    """``swap_after_check("d", target)``: the next check of a path turns ``d`` into a symlink to ``target``."""

    def arm(folder: str, target: Path) -> None:
        checked = Workspace.resolve

        def resolve_then_swap(self: Workspace, path: str, *, write: bool = False) -> Path:
            real = checked(self, path, write=write)
            os.rename(workspace / folder, workspace / f"{folder}.moved")
            os.symlink(os.path.relpath(target, workspace), workspace / folder)
            monkeypatch.setattr(Workspace, "resolve", checked)
            return real

        monkeypatch.setattr(Workspace, "resolve", resolve_then_swap)

    return arm


def test_a_new_file_is_not_written_through_a_swapped_folder(
    workspace: Path, outside: Path, call: Callable[..., ToolResult], swap_after_check: Callable[[str, Path], None]
) -> None:
    (workspace / "d").mkdir()
    swap_after_check("d", outside)
    result = call("write", path="d/new.txt", content="planted\n")
    assert result.is_error
    assert "changed while crab opened it (d is now a symlink)" in result.content
    assert list(outside.iterdir()) == []


def test_missing_folders_are_not_made_through_a_swapped_one(
    workspace: Path, outside: Path, call: Callable[..., ToolResult], swap_after_check: Callable[[str, Path], None]
) -> None:
    (workspace / "d").mkdir()
    swap_after_check("d", outside)
    assert call("write", path="d/deep/er/new.txt", content="planted\n").is_error
    assert list(outside.iterdir()) == []


def test_an_edit_does_not_land_in_a_swapped_folder(
    workspace: Path, outside: Path, call: Callable[..., ToolResult], swap_after_check: Callable[[str, Path], None]
) -> None:
    (workspace / "d").mkdir()
    (workspace / "d" / "a.txt").write_text("hello\n")
    (outside / "a.txt").write_text("hello\n")  # the same bytes, so the read gate alone cannot tell
    assert not call("read", path="d/a.txt").is_error
    swap_after_check("d", outside)
    result = call("edit", path="d/a.txt", edits=[{"old": "hello", "new": "planted"}])
    assert result.is_error and "changed while crab opened it" in result.content
    assert (outside / "a.txt").read_text() == "hello\n"


def test_a_read_does_not_show_a_file_from_a_swapped_folder(
    workspace: Path, outside: Path, call: Callable[..., ToolResult], swap_after_check: Callable[[str, Path], None]
) -> None:
    (workspace / "d").mkdir()
    (workspace / "d" / "a.txt").write_text("inside\n")
    (outside / "a.txt").write_text("secret outside\n")
    swap_after_check("d", outside)
    result = call("read", path="d/a.txt")
    assert result.is_error and "changed while crab opened it" in result.content
    assert "secret" not in result.content


def test_a_file_swapped_for_a_symlink_is_not_followed(
    workspace: Path, outside: Path, call: Callable[..., ToolResult], swap_after_check: Callable[[str, Path], None]
) -> None:
    (workspace / "a.txt").write_text("inside\n")
    (outside / "a.txt").write_text("secret outside\n")
    swap_after_check("a.txt", outside / "a.txt")
    result = call("read", path="a.txt")
    assert result.is_error and "changed while crab opened it (a.txt is now a symlink)" in result.content


def test_links_and_extra_roots_still_work_through_descriptors(
    workspace: Path, outside: Path, call: Callable[..., ToolResult], settings: dict[str, object]
) -> None:
    settings["extra_roots"] = [str(outside)]
    (workspace / "real").mkdir()
    (workspace / "alias").symlink_to(workspace / "real")  # a link inside the workspace: resolved first
    (workspace / "out").symlink_to(outside)  # a link to an extra root: opened from that root
    assert not call("write", path="alias/a.txt", content="one\n").is_error
    assert (workspace / "real" / "a.txt").read_text() == "one\n"
    assert not call("write", path="out/sub/b.txt", content="two\n").is_error
    assert (outside / "sub" / "b.txt").read_text() == "two\n"
    assert call("read", path="out/sub/b.txt").content == "     1\ttwo"
    assert "is a folder" in call("read", path=".").content
    assert "is a folder" in call("write", path=".", content="x").content
