"""crab-worktree: ``crab --worktree [NAME]`` (or ``[plugins.worktree] enabled``) runs the session in
a fresh git worktree on a branch of its own; leaving removes it when it holds no change and keeps
it, named, when it does; ``/worktrees`` lists them.

Hook implementations only; the worktrees are made, summed up and removed in
``crab_worktree.worktrees`` (git through ``crab_worktree.gitrun``). The entry point is the class:
crab makes one object per plugin host, which keeps the worktree it made for that run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import crab

if TYPE_CHECKING:
    from crab_worktree.worktrees import Worktree

CRAB_API = ">=0.1,<0.2"


class WorktreePlugin:
    """The ``worktree`` plugin: one per host, holding the worktree this run made."""

    CRAB_API = CRAB_API

    def __init__(self) -> None:
        self.made: Worktree | None = None

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
        if self.made is not None:
            agent.notice(f"working in worktree {self.made.name}: {self.made.path} on branch {self.made.branch}")

    @crab.hookimpl
    def crab_shutdown(self, agent: crab.AgentHandle) -> None:
        """Leave the worktree: removed when unchanged, else kept and named (never forced)."""
        if self.made is None:
            return
        from crab_worktree.worktrees import leave

        made, self.made = self.made, None
        said = leave(made)
        agent.notice(said, "info" if said.endswith("no changes") else "warning")

    @crab.hookimpl
    def crab_commands(self, config: crab.Config) -> list[crab.Command]:
        from crab_worktree.listing import worktrees_command

        return [crab.Command("worktrees", "list crab's git worktrees of this repository", worktrees_command)]
