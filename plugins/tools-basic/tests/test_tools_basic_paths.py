"""The seatbelt's shortcuts give what the slow way gives: a path resolved below a real root is
``os.path.realpath``'s answer (symlinks in, out and dangling, missing folders), and the text test
``within`` is pathlib's ``==``/``is_relative_to``; through the tools, a symlink swapped between two
reads is followed as it is at each call."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from crab import ToolResult
from crab_tools_basic.workspace import realpath_below, within


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path / "root"))
    (root / "dir" / "sub").mkdir(parents=True)
    (root / "dir" / "f.txt").write_text("x")
    (tmp_path / "outside").mkdir()
    (root / "out").symlink_to(tmp_path / "outside")
    (root / "dir" / "up").symlink_to("..")
    (root / "dangling").symlink_to(root / "nowhere" / "deeper")
    (root / "loop").symlink_to(root / "loop")
    (root / "file-link").symlink_to(root / "dir" / "f.txt")
    return root


@pytest.mark.parametrize(
    "names",
    [
        ("dir",),
        ("dir", "f.txt"),
        ("dir", "sub", "new.txt"),
        ("missing", "a", "b"),
        ("out", "secret"),
        ("dir", "up", "out", "x"),
        ("dangling", "x"),
        ("loop", "x"),
        ("file-link",),
        ("dir", "f.txt", "under-a-file"),
    ],
)
def test_realpath_below_a_real_root_is_realpath(tree: Path, names: tuple[str, ...]) -> None:
    assert realpath_below(str(tree), names) == os.path.realpath(tree.joinpath(*names))


@pytest.mark.parametrize(
    ("path", "root"),
    [
        ("/a/b", "/a"),
        ("/a", "/a"),
        ("/ab", "/a"),
        ("/a", "/a/b"),
        ("/", "/"),
        ("/x/y", "/"),
        ("/a/b/c", "/a/b"),
        ("/a/bc", "/a/b"),
    ],
)
def test_within_is_pathlib_s_test(path: str, root: str) -> None:
    assert within(Path(path), Path(root)) == (Path(path) == Path(root) or Path(path).is_relative_to(Path(root)))


def test_a_link_swapped_between_calls_is_followed_as_it_is_now(
    workspace: Path, tmp_path: Path, call: Callable[..., ToolResult]
) -> None:
    (workspace / "inside").mkdir()
    (workspace / "inside" / "a.txt").write_text("inside\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.txt").write_text("secret\n")
    (workspace / "link").symlink_to(workspace / "inside")
    assert call("read", path="link/a.txt").content == "     1\tinside"
    (workspace / "link").unlink()
    (workspace / "link").symlink_to(tmp_path / "elsewhere")
    refused = call("read", path="link/a.txt")
    assert refused.is_error and "outside the workspace" in refused.content


def test_the_default_log_folder_through_a_linked_crab_home(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from crab import ToolContext
    from crab.tools import run_tool
    from crab_tools_basic.registry import build_tools

    real_home = tmp_path / "real-home"
    for session in ("this-session", "other-session"):
        folder = real_home / "tools-basic" / "bash-logs" / session
        folder.mkdir(parents=True)
        (folder / "bash.log").write_text(f"log of {session}\n")
    (tmp_path / "home-link").symlink_to(real_home)
    monkeypatch.setenv("CRAB_HOME", str(tmp_path / "home-link"))
    read = {t.name: t for t in build_tools({})}["read"]
    ctx = ToolContext(session_id="this-session", workspace=workspace, settings={})

    def call(path: Path) -> ToolResult:
        return asyncio.run(run_tool(read, {"path": str(path)}, ctx))

    logs = tmp_path / "home-link" / "tools-basic" / "bash-logs"
    assert call(logs / "this-session" / "bash.log").content == "     1\tlog of this-session"
    refused = call(logs / "other-session" / "bash.log")
    assert refused.is_error and "crab's own folder" in refused.content


def test_a_folder_below_a_real_base_is_resolved_anew_until_it_exists(tmp_path: Path) -> None:
    """real_folder(path, real_base): a missing folder is its text as written, then what it is once made."""
    from crab_tools_basic.workspace import real_folder

    base = os.path.realpath(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    wanted = os.path.join(base, "logs", "session")
    assert real_folder(wanted, base) == wanted  # "logs" is missing: nothing below it is looked at
    (tmp_path / "logs").mkdir()
    assert real_folder(wanted, base) == wanted  # "session" is missing
    (tmp_path / "logs" / "session").symlink_to(tmp_path / "elsewhere")
    assert real_folder(wanted, base) == os.path.realpath(tmp_path / "elsewhere")
    (tmp_path / "logs" / "session").unlink()
    (tmp_path / "logs" / "session").mkdir()
    assert real_folder(wanted, base) == wanted
