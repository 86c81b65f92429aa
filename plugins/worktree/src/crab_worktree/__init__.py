"""crab-worktree: ``crab --worktree [NAME]`` (or ``[plugins.worktree] enabled``) runs the session in
a fresh git worktree on a branch of its own; leaving removes it when it holds no change and keeps
it, named, when it does; ``/worktrees`` lists them. Subagents declared with ``isolation:
worktree`` (crab-subagents, through the hook it declares) each get one too.

Hook implementations only; the worktrees are made, summed up and removed in
``crab_worktree.worktrees`` (git through ``crab_worktree.gitrun``). The entry point is the class:
crab makes one object per plugin host, which keeps the worktree it made for that run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    from crab_worktree.children import ChildWorktrees
    from crab_worktree.worktrees import Worktree

CRAB_API = ">=0.1,<0.2"


class WorktreeHooks:
    """The hook crab-worktree declares: another plugin hears of worktrees without importing it."""

    @crab.hookspec
    def crab_worktree_hooks(self, config: crab.Config) -> list[Any] | None:
        """Objects told about the worktrees crab-worktree makes for subagents and removes, each
        with ``async create(name, cwd, session_id) -> Path | None`` (a folder made instead of
        git's; None: git makes it; ``crab.CrabError`` fails the creation) and ``async
        remove(path, cwd, session_id)`` (a worktree removed, or one ``create`` made, to clean
        up). crab-hooks runs Claude Code's ``WorktreeCreate`` and ``WorktreeRemove`` on it.

        crab-worktree collects it (``AgentHandle.collect``) when it makes or removes a worktree.
        Return a list, or None. Not first-result: the first ``create`` that returns a folder wins;
        every ``remove`` is called. A plugin implementing it loads fine without crab-worktree.
        """


class WorktreePlugin:
    """The ``worktree`` plugin: one per host, holding the worktree this run made."""

    CRAB_API = CRAB_API
    CRAB_HOOKSPECS = WorktreeHooks

    def __init__(self) -> None:
        self.made: Worktree | None = None
        self.children: ChildWorktrees | None = None
        self.handle: crab.AgentHandle | None = None

    def announced(self) -> list[Any]:
        """The ``crab_worktree_hooks`` offers of this run (none before it started)."""
        if self.handle is None:
            return []
        from crab_worktree.announce import HOOK, offers

        return offers(self.handle.collect(HOOK))

    @crab.hookimpl
    def crab_config_table(self) -> crab.ConfigTable:
        from crab_worktree.settings import TABLE

        return TABLE

    @crab.hookimpl
    def crab_workspace(self, workspace: Path, request: str | None, config: crab.Config) -> Path | None:
        """A fresh worktree when the user asked (``--worktree``) or the settings say every run."""
        settings = config.plugin_settings("worktree")
        if request is None and not settings.get("enabled"):
            return None
        from crab_worktree.worktrees import create

        self.made, inside = create(
            workspace, request or str(settings.get("name") or ""), settings["folder"], settings["branch_prefix"]
        )
        return inside

    @crab.hookimpl
    def crab_startup(self, agent: crab.AgentHandle) -> None:
        self.handle = agent
        if self.made is not None:
            agent.notice(f"working in worktree {self.made.name}: {self.made.path} on branch {self.made.branch}")

    @crab.hookimpl
    async def crab_shutdown(self, agent: crab.AgentHandle) -> None:
        """Leave the worktree: removed when unchanged (``WorktreeRemove`` then runs), else kept
        and named (never forced)."""
        if self.made is None:
            return
        from crab_worktree.announce import removed
        from crab_worktree.worktrees import leave

        made, self.made = self.made, None
        said = leave(made)
        agent.notice(said, "info" if said.endswith("no changes") else "warning")
        if said.endswith(" removed: no changes"):
            await removed(self.announced(), made.path, made.origin, "")

    @crab.hookimpl
    def crab_child_workspaces(self, config: crab.Config) -> list[ChildWorktrees]:
        """``worktree`` for crab-subagents' ``isolation: worktree`` agents (the hook it declares)."""
        if self.children is None:
            from crab_worktree.children import ChildWorktrees

            settings = config.plugin_settings("worktree")
            self.children = ChildWorktrees(settings["folder"], settings["branch_prefix"], self.announced)
        return [self.children]

    @crab.hookimpl
    def crab_commands(self, config: crab.Config) -> list[crab.Command]:
        from crab_worktree.listing import worktrees_command

        return [crab.Command("worktrees", "list crab's git worktrees of this repository", worktrees_command)]
