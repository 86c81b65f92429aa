"""The workspace seatbelt: paths that leave the workspace are refused, extra roots let them in."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab import ConfigError, ToolError, ToolResult
from crab_tools_basic.workspace import Workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("secret\n")
    return folder


def test_dotdot_escape_is_refused(workspace: Path, outside: Path, call: Callable[..., ToolResult]) -> None:
    for name in ("read", "write", "edit"):
        args: dict[str, Any] = {"path": "../outside/secret.txt"}
        if name == "write":
            args["content"] = "pwned"
        if name == "edit":
            args.update(old="secret", new="pwned")
        result = call(name, **args)
        assert result.is_error, name
        assert "outside the workspace" in result.content
    assert (outside / "secret.txt").read_text() == "secret\n"


def test_absolute_path_elsewhere_is_refused(outside: Path, call: Callable[..., ToolResult]) -> None:
    result = call("read", path=str(outside / "secret.txt"))
    assert result.is_error
    assert "outside the workspace" in result.content


def test_absolute_path_inside_is_fine(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "a.txt").write_text("hi\n")
    assert call("read", path=str(workspace / "a.txt")).content == "     1\thi"


def test_dotdot_that_stays_inside_is_fine(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "sub").mkdir()
    (workspace / "a.txt").write_text("hi\n")
    assert not call("read", path="sub/../a.txt").is_error


def test_symlink_pointing_out_is_refused(workspace: Path, outside: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "linkdir").symlink_to(outside)
    assert call("read", path="link.txt").is_error
    assert call("read", path="linkdir/secret.txt").is_error
    assert call("write", path="linkdir/new.txt", content="x").is_error
    assert call("grep", pattern="secret", path="linkdir").is_error
    assert call("ls", path="linkdir").is_error
    assert not (outside / "new.txt").exists()


def test_dangling_symlink_pointing_out_cannot_create_a_file(
    workspace: Path, outside: Path, call: Callable[..., ToolResult]
) -> None:
    (workspace / "dangling").symlink_to(outside / "created.txt")
    assert call("write", path="dangling", content="x").is_error
    assert not (outside / "created.txt").exists()


def test_symlink_inside_the_workspace_is_followed(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "real.txt").write_text("content\n")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    assert not call("read", path="alias.txt").is_error
    assert not call("edit", path="alias.txt", old="content", new="changed").is_error
    assert (workspace / "alias.txt").is_symlink()  # the link survives; its target changed
    assert (workspace / "real.txt").read_text() == "changed\n"


def test_extra_roots_let_a_folder_in(outside: Path, settings: dict[str, Any], call: Callable[..., ToolResult]) -> None:
    settings["extra_roots"] = [str(outside)]
    assert call("read", path=str(outside / "secret.txt")).content == "     1\tsecret"
    assert not call("edit", path=str(outside / "secret.txt"), old="secret", new="shared").is_error
    assert (outside / "secret.txt").read_text() == "shared\n"


def test_bad_extra_roots_are_an_error_result(settings: dict[str, Any], call: Callable[..., ToolResult]) -> None:
    settings["extra_roots"] = "not-a-list"
    with pytest.raises(ConfigError, match="extra_roots"):
        call("read", path="a.txt")  # building the tools validates the table, as registration does


def test_log_folder_is_readable_but_not_writable(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws", read_only_roots=(tmp_path / "logs",))
    assert ws.resolve(str(tmp_path / "logs" / "x.log")) == tmp_path / "logs" / "x.log"
    with pytest.raises(ToolError, match="read-only"):
        ws.resolve(str(tmp_path / "logs" / "x.log"), write=True)


def test_write_keeps_mode_and_creates_parents(workspace: Path, call: Callable[..., ToolResult]) -> None:
    script = workspace / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o750)
    assert not call("read", path="run.sh").is_error
    assert not call("write", path="run.sh", content="echo new\n").is_error
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o750
    assert not call("write", path="deep/er/file.txt", content="x").is_error
    assert (workspace / "deep" / "er" / "file.txt").read_text() == "x"
    leftovers = [p for p in workspace.rglob("*") if p.name.endswith(".crab-tmp")]
    assert leftovers == []


def test_write_refuses_a_folder(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "dir").mkdir()
    result = call("write", path="dir", content="x")
    assert result.is_error
    assert "folder" in result.content


@pytest.fixture
def home_in_workspace(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """crab run in ``~``: the workspace holds crab's own folder with the user's key in it."""
    home = workspace / ".crab"
    home.mkdir()
    (home / "auth.json").write_text('{"openai": "sk-user-secret-key-000000"}\n')
    monkeypatch.setenv("CRAB_HOME", str(home))
    return home


def test_crab_home_inside_the_workspace_is_off_limits(
    home_in_workspace: Path, workspace: Path, call: Callable[..., ToolResult]
) -> None:
    (workspace / "notes.txt").write_text("sk-user is not here\n")
    for name, args in (
        ("read", {"path": ".crab/auth.json"}),
        ("write", {"path": ".crab/trusted-projects.json", "content": "{}"}),
        ("edit", {"path": ".crab/auth.json", "old": "sk", "new": "xx"}),
        ("grep", {"pattern": "sk-user", "path": ".crab"}),
        ("ls", {"path": ".crab"}),
    ):
        result = call(name, **args)
        assert result.is_error, name
        assert "inside crab's own folder" in result.content, name
    assert "sk-user-secret-key" not in call("grep", pattern="sk-user").content
    assert "notes.txt" in call("grep", pattern="sk-user").content
    assert ".crab" not in call("ls").content
    assert ".crab" not in call("glob", pattern="**/*.json").content
    assert not (home_in_workspace / "trusted-projects.json").exists()


def test_working_inside_crab_home_on_purpose_is_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: Callable[..., ToolResult], workspace: Path
) -> None:
    monkeypatch.setenv("CRAB_HOME", str(tmp_path))  # the workspace lies inside crab's folder
    (workspace / "a.txt").write_text("hi\n")
    assert call("read", path="a.txt").content == "     1\thi"


def test_a_path_that_changes_while_it_is_resolved_is_an_error_result(
    workspace: Path, call: Callable[..., ToolResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_realpath = os.path.realpath

    def vanished(path: str | Path) -> str:
        if str(path).endswith("a.txt"):  # what realpath raises when a link goes mid-walk
            raise FileNotFoundError(2, "No such file or directory")
        return real_realpath(path)

    (workspace / "real").mkdir()
    (workspace / "d").symlink_to("real")  # a link on the way: realpath follows it from there
    monkeypatch.setattr(os.path, "realpath", vanished)
    result = call("write", path="d/a.txt", content="x")
    assert result.is_error
    assert result.content == "d/a.txt cannot be resolved (No such file or directory); try again"


def test_a_workspace_link_pointed_elsewhere_is_followed_on_the_next_call(tmp_path: Path) -> None:
    """The workspace's real path is remembered between calls (crab_tools_basic.workspace.real_folder):
    only while it is still the same folder. A workspace reached through a link that now points to
    another folder is that other folder at the next call, and the first one is outside it."""
    import asyncio

    from crab import ToolContext
    from crab.tools import run_tool
    from crab_tools_basic.registry import build_tools

    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "a.txt").write_text(f"{folder.name}\n")
    link = tmp_path / "ws-link"
    link.symlink_to(first)
    settings = {"output_dir": str(tmp_path / "logs")}
    read = {t.name: t for t in build_tools(settings)}["read"]
    ctx = ToolContext(session_id="s", workspace=link, settings=settings)

    def run(path: str) -> ToolResult:
        return asyncio.run(run_tool(read, {"path": path}, ctx))

    assert run("a.txt").content == "     1\tfirst"
    assert not run(str(first / "a.txt")).is_error
    link.unlink()
    link.symlink_to(second)
    assert run("a.txt").content == "     1\tsecond"
    refused = run(str(first / "a.txt"))
    assert refused.is_error and "outside the workspace" in refused.content


def test_a_workspace_folder_replaced_in_place_is_the_new_folder(tmp_path: Path) -> None:
    """The same path, a different folder (moved away, another made in its place): resolved anew."""
    import asyncio

    from crab import ToolContext
    from crab.tools import run_tool
    from crab_tools_basic.registry import build_tools

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("old\n")
    settings = {"output_dir": str(tmp_path / "logs")}
    read = {t.name: t for t in build_tools(settings)}["read"]
    ctx = ToolContext(session_id="s", workspace=workspace, settings=settings)

    def run(path: str) -> ToolResult:
        return asyncio.run(run_tool(read, {"path": path}, ctx))

    assert run("a.txt").content == "     1\told"
    moved = tmp_path / "moved"
    workspace.rename(moved)
    (tmp_path / "elsewhere").mkdir()
    workspace.symlink_to(tmp_path / "elsewhere")  # the old path now leads to another folder
    (tmp_path / "elsewhere" / "a.txt").write_text("new\n")
    assert run("a.txt").content == "     1\tnew"
    refused = run(str(moved / "a.txt"))
    assert refused.is_error and "outside the workspace" in refused.content


def test_a_symlink_made_inside_the_workspace_after_a_read_is_still_resolved(
    workspace: Path, outside: Path, call: Callable[..., ToolResult]
) -> None:
    """Only folders' real paths are remembered: a link made later in the workspace is looked at."""
    (workspace / "sub").mkdir()
    (workspace / "sub" / "secret.txt").write_text("mine\n")
    assert call("read", path="sub/secret.txt").content == "     1\tmine"
    (workspace / "sub" / "secret.txt").unlink()
    (workspace / "sub").rmdir()
    (workspace / "sub").symlink_to(outside)
    result = call("read", path="sub/secret.txt")
    assert result.is_error and "outside the workspace" in result.content


def test_a_workspace_checks_against_its_own_roots_however_it_was_made(tmp_path: Path) -> None:
    """The roots' text is made once per Workspace: a copy with other roots checks against those."""
    import dataclasses

    for name in ("ws", "other", "logs"):
        (tmp_path / name).mkdir()
    ws = Workspace(tmp_path / "ws", read_only_roots=(tmp_path / "logs",))
    moved = dataclasses.replace(ws, root=tmp_path / "other", read_only_roots=())
    assert ws.resolve("a.txt") == tmp_path / "ws" / "a.txt"
    assert moved.resolve("a.txt") == tmp_path / "other" / "a.txt"
    assert ws.resolve(str(tmp_path / "logs" / "x.log")) == tmp_path / "logs" / "x.log"
    with pytest.raises(ToolError, match="outside the workspace"):
        moved.resolve(str(tmp_path / "logs" / "x.log"))
    with pytest.raises(ToolError, match="outside the workspace"):
        moved.resolve(str(tmp_path / "ws" / "a.txt"))
    assert moved == dataclasses.replace(moved)
