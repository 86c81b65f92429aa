"""Fixtures for crab-tools-basic's tests: a workspace, a tool context and a way to call tools."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from crab import ToolContext, ToolResult
from crab.tools import run_tool
from crab_tools_basic.registry import build_tools


@pytest.fixture(autouse=True, scope="session")
def no_user_git_excludes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The walk reads the user's global git excludes file: tests see an empty git config instead."""
    home = tmp_path_factory.mktemp("git-home")
    (home / "gitconfig").write_text("")
    saved = {key: os.environ.get(key) for key in ("GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME")}
    os.environ["GIT_CONFIG_GLOBAL"] = str(home / "gitconfig")
    os.environ["XDG_CONFIG_HOME"] = str(home / "xdg")
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def settings(tmp_path: Path) -> dict[str, Any]:
    """The [plugins.tools-basic] table; tests may change it before the first call."""
    return {"output_dir": str(tmp_path / "logs")}


@pytest.fixture
def ctx(workspace: Path, settings: dict[str, Any]) -> ToolContext:
    return ToolContext(session_id="test-session", workspace=workspace, settings=settings)


@pytest.fixture
def call(ctx: ToolContext, settings: dict[str, Any]) -> Callable[..., ToolResult]:
    """``call("read", path="a.txt")`` runs the registered tool as the loop would."""

    def run(name: str, **arguments: Any) -> ToolResult:
        tools = {t.name: t for t in build_tools(settings)}
        return asyncio.run(run_tool(tools[name], arguments, ctx))

    return run
