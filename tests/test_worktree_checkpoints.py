"""crab-worktree beside crab-checkpoints: a run in a worktree takes its checkpoints in the worktree,
and ``/undo`` puts the worktree's files back, the user's checkout untouched throughout."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import crab
from crab_checkpoints import CheckpointsPlugin
from crab_worktree import WorktreePlugin

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


@crab.tool(permission="write")
def put(path: str, content: str, ctx: crab.ToolContext) -> str:
    """Write a file of the workspace."""
    (ctx.workspace / path).write_text(content)
    return f"wrote {path}"


class Tools:
    @crab.hookimpl
    def crab_tools(self, config: object) -> list[crab.Tool]:
        return [put]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_undo_in_a_worktree_puts_back_the_worktrees_files(tmp_path: Path, crab_agent) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("one\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    h = crab_agent(
        [[{"tool": "put", "args": {"path": "a.txt", "content": "two\n"}}], [{"text": "changed"}]],
        plugins={"worktree": WorktreePlugin(), "checkpoints": CheckpointsPlugin(), "tools": Tools()},
        config={"plugins.worktree.enabled": True, "plugins.worktree.name": "undo", "crab.permissions": "yolo"},
        workspace=repo,
    )
    tree = repo / ".crab" / "worktrees" / "undo"
    h.run("change a")
    assert (tree / "a.txt").read_text() == "two\n" and (repo / "a.txt").read_text() == "one\n"
    h.run("/undo")
    assert (tree / "a.txt").read_text() == "one\n", [e.text for e in h.events_of(crab.events.CommandOutput)]
    assert (repo / "a.txt").read_text() == "one\n" and git(repo, "status", "--porcelain") == ""
    h.run_async(h.agent.close())
    assert not tree.exists()  # back to its start: nothing to keep
