"""Fixtures for crab-checkpoints' tests: a real git repository with the user's work in progress,
an agent whose tools really write, and git's view of the repository to compare."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import crab
import pytest
from crab.testing import AgentHarness
from crab_checkpoints import CheckpointsPlugin


def _preview_put(arguments: dict[str, Any], ctx: crab.ToolContext) -> list[crab.events.FileDiff]:
    return [crab.events.FileDiff(arguments["path"], f"+{arguments['content']}\n")]


@crab.tool(permission="write", preview=_preview_put)
def put(path: str, content: str, ctx: crab.ToolContext) -> crab.ToolResult:
    """Write a file (the test's stand-in for write: real bytes, a preview, a diff)."""
    file = ctx.workspace / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(content)
    return crab.ToolResult(f"wrote {path}", diffs=(crab.events.FileDiff(path, f"+{content}\n", added=1),))


@crab.tool(permission="exec")
def sh(command: str, ctx: crab.ToolContext) -> str:
    """Run a shell command in the workspace (the stand-in for bash)."""
    done = crab.processes.run_bounded(["sh", "-c", command], cwd=ctx.workspace)
    return f"exit {done.returncode}"


class Tools:
    @crab.hookimpl
    def crab_tools(self, config: Any) -> list[crab.Tool]:
        return [put, sh]


def run_git(repo: Path, *args: str) -> str:
    environment = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # the test's own looks write nothing
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=environment, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def git_view(repo: Path) -> dict[str, str]:
    """What must never change: status, stash, refs (crab's own aside), HEAD and the index file."""
    refs = "\n".join(line for line in run_git(repo, "for-each-ref").splitlines() if "refs/crab/" not in line)
    return {
        "status": run_git(repo, "status", "--porcelain=v2", "--branch", "--untracked-files=all"),
        "stash": run_git(repo, "stash", "list"),
        "refs": refs,
        "head": run_git(repo, "symbolic-ref", "HEAD") + run_git(repo, "rev-parse", "HEAD"),
        "staged": run_git(repo, "ls-files", "--stage"),
        "index": hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
    }


def tree_files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.fixture(autouse=True)
def quiet_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user git config, and no repository above tmp_path."""
    (tmp_path / "gitconfig").write_text(
        "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("CRAB_HOME", str(tmp_path / "home"))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a commit, a stash, a staged and an unstaged change and an untracked file."""
    root = tmp_path / "repo"
    root.mkdir()
    git = run_git
    git(root, "init", "-q")
    (root / "a.txt").write_text("a committed\n")
    (root / "b.txt").write_text("b committed\n")
    (root / "c.txt").write_text("c committed\n")
    (root / ".gitignore").write_text("ignored/\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    (root / "c.txt").write_text("c stashed\n")
    git(root, "stash", "-q")
    (root / "b.txt").write_text("b staged\n")
    git(root, "add", "b.txt")
    (root / "c.txt").write_text("c unstaged\n")
    (root / "notes.txt").write_text("untracked notes\n")
    return root


@pytest.fixture
def git() -> Callable[..., str]:
    """``git(repo, *args)``: git's output (the test fails on an error); it writes nothing on its own."""
    return run_git


@pytest.fixture
def view() -> Callable[[Path], dict[str, str]]:
    """``view(repo)``: what must never change (see ``git_view``)."""
    return git_view


@pytest.fixture
def contents() -> Callable[[Path], dict[str, str]]:
    """``contents(root)``: every file under ``root`` but ``.git``'s, with its text."""
    return tree_files


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Callable[..., AgentHarness]]:
    """``agent(replies, workspace)``: an agent with the test tools and this plugin, allowed to write."""
    made: list[AgentHarness] = []

    def make(replies: list[Any], workspace: Path, **config: Any) -> AgentHarness:
        settings = {"crab.permissions": "yolo", **{f"plugins.checkpoints.{k}": v for k, v in config.items()}}
        harness = AgentHarness(
            replies,
            plugins={"tools": Tools(), "checkpoints": CheckpointsPlugin()},
            workspace=workspace,
            config=settings,
        )
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.close()
