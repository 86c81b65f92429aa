"""Fixtures for crab-worktree's tests: a real git repository under ``tmp_path`` (``repo``), and the
real ``crab`` command on crab.testing's scripted provider (``crab_site``: provider ``fake``, model
``script``) with a test plugin whose ``write_note`` tool writes a file (permission ``write``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab.testing import ScriptedSite

PLUGINS = "fake,worktree,notes"
"""The test's provider, crab-worktree and the test's write tool: nothing else installed is loaded."""

NOTES = '''"""A test plugin: write_note writes a file in the workspace (permission write)."""

from pathlib import Path

import crab


@crab.tool(permission="write")
def write_note(name: str, text: str, ctx: crab.ToolContext) -> str:
    """Write text to a file of the workspace."""
    (Path(ctx.workspace) / name).write_text(text, encoding="utf-8")
    return f"wrote {name} in {ctx.workspace}"


@crab.hookimpl
def crab_tools(config):
    return [write_note]
'''

GIT_ENV = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.fixture
def notes_source() -> str:
    """The source of the test's ``write_note`` plugin (for a test that starts crab itself)."""
    return NOTES


@pytest.fixture
def git_env() -> dict[str, str]:
    """The identity git uses in the tests."""
    return GIT_ENV


@pytest.fixture
def git_in() -> Callable[..., str]:
    """``git_in(cwd, *args)``: git's stdout (the test's identity, failing on an error)."""
    return git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit (``README.md``, ``src/app.py``) in ``tmp_path/repo``."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("hello\n")
    (root / "src" / "app.py").write_text("print('app')\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


@pytest.fixture
def crab_in(crab_site: ScriptedSite) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``crab_in(cwd, replies, *args, plugins=PLUGINS)``: ``crab ARGS`` in ``cwd``, the provider replaying
    ``replies``."""
    crab_site.add_plugin("notes", "crab_worktree_test_notes", NOTES)

    def run(cwd: Path, replies: list[Any], *args: str, plugins: str = PLUGINS) -> subprocess.CompletedProcess[str]:
        crab_site.script(replies)
        return subprocess.run(
            [sys.executable, "-m", "crab", *args],
            cwd=cwd,
            env={**crab_site.env(plugins), **GIT_ENV},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run
