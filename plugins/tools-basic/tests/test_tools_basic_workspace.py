"""The workspace seatbelt: paths that leave the workspace are refused, extra roots let them in."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab._contracts.errors import ConfigError, ToolError
from crab._contracts.tools import ToolResult
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

    monkeypatch.setattr(os.path, "realpath", vanished)
    result = call("write", path="d/a.txt", content="x")
    assert result.is_error
    assert result.content == "d/a.txt cannot be resolved (No such file or directory); try again"
