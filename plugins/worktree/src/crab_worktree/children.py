"""Worktrees for child sessions: crab-subagents' ``isolation: worktree`` agents each work in a git
worktree of their own, offered through the hook crab-subagents declares (``crab_child_workspaces``:
``name``, ``enter``, ``leave``), so neither plugin imports the other."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from crab_worktree.worktrees import Worktree, create, leave, new_name

UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class ChildWorktrees:
    """One per run: makes a worktree for each child that asks, and leaves it when the child ends."""

    name = "worktree"

    def __init__(self, folder: str, prefix: str) -> None:
        self.folder = folder
        self.prefix = prefix
        self.made: dict[Path, Worktree] = {}
        self.lock = threading.Lock()  # several task calls of one reply run at once, each in a thread

    def enter(self, workspace: Path, label: str) -> Path:
        """A fresh worktree from the HEAD of ``workspace``'s repository, named after the agent
        (``LABEL-DATE-TIME-XXXX``, branch ``crab/LABEL-…``); the folder in it matching ``workspace``."""
        stem = UNSAFE.sub("-", label).strip("-.")[:40] or "agent"
        tree, inside = create(workspace, f"{stem}-{new_name()}", self.folder, self.prefix)
        with self.lock:
            self.made[inside.resolve()] = tree
        return inside

    def leave(self, folder: Path) -> str:
        """Remove the child's worktree when it holds no change; else keep it: one line naming its
        folder, branch and diff summary (``worktrees.leave``)."""
        with self.lock:
            tree = self.made.pop(folder.resolve(), None)
        if tree is None:
            return f"{folder} is not a worktree this run made for a child: left as it is"
        return leave(tree)
