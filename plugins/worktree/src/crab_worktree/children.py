"""Worktrees for child sessions: crab-subagents' ``isolation: worktree`` agents each work in a git
worktree of their own, offered through the hook crab-subagents declares (``crab_child_workspaces``:
``name``, ``enter``, ``leave``), so neither plugin imports the other. Making and removing one is
announced to the plugins implementing ``crab_worktree_hooks`` (``crab_worktree.announce``)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crab_worktree.announce import made_by_hooks, removed
from crab_worktree.worktrees import Worktree, create, leave, new_name

UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class Entered:
    """A child's worktree: made by git (``tree``), or by a ``WorktreeCreate`` hook (None), for
    ``session_id`` working in ``cwd``."""

    tree: Worktree | None
    session_id: str
    cwd: Path


class ChildWorktrees:
    """One per run: makes a worktree for each child that asks, and leaves it when the child ends."""

    name = "worktree"

    def __init__(self, folder: str, prefix: str, hooks: Callable[[], Sequence[Any]] = tuple) -> None:
        self.folder = folder
        self.prefix = prefix
        self.hooks = hooks
        """The ``crab_worktree_hooks`` offers of this run (asked each time: the run's handle collects them)."""
        self.made: dict[Path, Entered] = {}

    async def enter(self, workspace: Path, label: str, session_id: str) -> Path:
        """A fresh worktree from the HEAD of ``workspace``'s repository, named after the agent
        (``LABEL-DATE-TIME-XXXX``, branch ``crab/LABEL-…``), or the folder a ``WorktreeCreate``
        hook made instead of git; the folder in it matching ``workspace``."""
        stem = UNSAFE.sub("-", label).strip("-.")[:40] or "agent"
        name = f"{stem}-{new_name()}"
        hooks = self.hooks()
        made = await made_by_hooks(hooks, name, workspace, session_id)
        if made is not None:
            self.made[made.resolve()] = Entered(None, session_id, workspace)
            return made
        tree, inside = await asyncio.to_thread(create, workspace, name, self.folder, self.prefix)
        self.made[inside.resolve()] = Entered(tree, session_id, workspace)
        return inside

    async def leave(self, folder: Path) -> str:
        """Remove the child's worktree when it holds no change; else keep it: one line naming its
        folder, branch and diff summary (``worktrees.leave``). A hook's folder is its hooks' to remove."""
        entered = self.made.pop(folder.resolve(), None)
        if entered is None:
            return f"{folder} is not a worktree this run made for a child: left as it is"
        if entered.tree is None:
            await removed(self.hooks(), folder, entered.cwd, entered.session_id)
            return f"worktree {folder} (made by a WorktreeCreate hook) left to the WorktreeRemove hooks"
        said = await asyncio.to_thread(leave, entered.tree)
        if said.endswith(" removed: no changes"):
            await removed(self.hooks(), entered.tree.path, entered.cwd, entered.session_id)
        return said
