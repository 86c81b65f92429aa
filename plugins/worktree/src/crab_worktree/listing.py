"""``/worktrees``: crab's worktrees of this repository, each with what it holds."""

from __future__ import annotations

import asyncio

import crab

from crab_worktree.gitrun import WorktreeError, git
from crab_worktree.worktrees import listing


def lines(workspace: crab.AgentHandle) -> list[str]:
    prefix = str(workspace.config.plugin_settings("worktree").get("branch_prefix", "crab/"))
    found = listing(workspace.workspace, prefix)
    if not found:
        return ["no crab worktrees in this repository (crab --worktree makes one)"]
    out = [f"crab worktrees ({len(found)}):"]
    for tree in found:
        here = " (this session)" if workspace.workspace.resolve().is_relative_to(tree.path.resolve()) else ""
        if tree.path.is_dir():
            status = git(tree.path, "status", "--porcelain", "--untracked-files=all").splitlines()
            held = f"{len(status)} uncommitted" if status else "clean"
        else:
            held = "folder missing (git worktree prune)"
        out.append(f"  {tree.branch}  {tree.path}  {held}{here}")
    return out


async def worktrees_command(ctx: crab.CommandContext, args: str) -> crab.CommandResult:
    try:
        found = await asyncio.to_thread(lines, ctx.handle)
    except WorktreeError as exc:
        return crab.CommandResult(str(exc), is_error=True)
    return crab.CommandResult("\n".join(found))
