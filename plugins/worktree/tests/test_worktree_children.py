"""Worktrees for subagents (``crab_child_workspaces``, the hook crab-subagents declares): each child
gets a worktree of its own from the repository's HEAD, removed with its branch when unchanged,
kept and named (folder, branch, diff summary) when changed; real git in ``tmp_path``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from crab_worktree.children import ChildWorktrees


def offer(tmp_path: Path) -> ChildWorktrees:
    return ChildWorktrees(".crab/worktrees", "crab/")  # the settings' defaults


def test_a_childs_worktree_is_its_own_and_removed_when_unchanged(repo: Path, tmp_path: Path, git_in) -> None:
    children = offer(tmp_path)
    assert children.name == "worktree"
    one = asyncio.run(children.enter(repo / "src", "reader", "s1"))
    two = asyncio.run(children.enter(repo / "src", "reader", "s1"))
    assert one != two and one.name == two.name == "src"  # the same sub-folder, in two worktrees
    assert one.parent.parent == repo / ".crab" / "worktrees" and one.parent.name.startswith("reader-")
    assert (one / "app.py").read_text() == "print('app')\n"
    said = asyncio.run(children.leave(one))
    assert said == f"worktree {one.parent.name} removed: no changes"
    assert not one.parent.exists() and f"crab/{one.parent.name}" not in git_in(repo, "branch", "--list", "crab/*")
    assert two.exists()  # the other child's is its own


def test_a_changed_childs_worktree_is_kept_and_named(repo: Path, tmp_path: Path, git_in) -> None:
    children = offer(tmp_path)
    folder = asyncio.run(children.enter(repo, "Writer Agent!", "s1"))
    (folder / "README.md").write_text("hello\nworld\n")
    (folder / "new.txt").write_text("x\n")
    said = asyncio.run(children.leave(folder))
    branch = f"crab/{folder.name}"
    assert folder.name.startswith("Writer-Agent-")
    assert said == (
        f"worktree kept: {folder} on branch {branch} (1 file changed, 1 insertion(+), 1 uncommitted, "
        f"1 untracked file); merge it with `git merge {branch}`, or remove it with `git worktree remove {folder}`"
    )
    assert (folder / "new.txt").exists() and branch in git_in(repo, "branch", "--list", "crab/*")
    assert git_in(repo, "status", "--porcelain") == ""  # the user's checkout never changed
    assert "not a worktree this run made" in asyncio.run(children.leave(folder))  # left once only
