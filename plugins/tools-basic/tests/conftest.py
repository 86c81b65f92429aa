"""Fixtures for crab-tools-basic's tests: a workspace, a tool context and a way to call tools."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab import ToolContext, ToolResult
from crab_tools_basic.registry import build_tools


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
        return asyncio.run(tools[name].run(arguments, ctx))

    return run
