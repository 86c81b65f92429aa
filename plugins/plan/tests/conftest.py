"""Fixtures for crab-plan's tests, on crab.testing's: the real ``crab`` command on a scripted provider
(``crab_site``: provider ``fake``, model ``script``) with a test plugin whose ``write_note`` tool
writes a file (permission ``write``), and ``crab chat`` in tmux (``crab_screen``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab.testing import ScriptedSite, TmuxScreen

PLUGINS = "fake,plan,notes"
"""The test's provider, crab-plan and the test's write tool: nothing else installed is loaded."""

NOTES = '''"""A test plugin: write_note writes a file in the workspace (permission write)."""

from pathlib import Path

import crab


@crab.tool(permission="write")
def write_note(name: str, text: str, ctx: crab.ToolContext) -> str:
    """Write text to a file of the workspace."""
    (Path(ctx.workspace) / name).write_text(text, encoding="utf-8")
    return f"wrote {name}"


@crab.hookimpl
def crab_tools(config):
    return [write_note]
'''


@pytest.fixture
def fake_env(crab_site: ScriptedSite) -> Callable[..., dict[str, str]]:
    """``fake_env(replies)``: the environment of a ``crab`` subprocess that loads only the test
    provider, crab-plan and the test's write tool, the provider replaying ``replies``."""
    crab_site.add_plugin("notes", "crab_plan_test_notes", NOTES)

    def build(replies: list[Any]) -> dict[str, str]:
        crab_site.script(replies)
        return crab_site.env(PLUGINS)

    return build


@pytest.fixture
def sent_requests(crab_site: ScriptedSite) -> Callable[[], list[dict[str, Any]]]:
    """``sent_requests()``: every request the provider received (model, system, messages)."""
    return crab_site.requests


@pytest.fixture
def chat_screen(
    tmp_path: Path, fake_env: Callable[..., dict[str, str]], crab_screen: Callable[..., TmuxScreen]
) -> Callable[..., TmuxScreen]:
    """``chat_screen(replies, *args)`` starts ``crab chat`` (core's plain prompt) on the test provider in tmux."""

    def start(replies: list[Any], *args: str) -> TmuxScreen:
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        command = [sys.executable, "-m", "crab", "chat", "--provider", "fake", "-m", "script", *args]
        return crab_screen(command, cwd=work, env=fake_env(replies), ready="crab>")

    return start
