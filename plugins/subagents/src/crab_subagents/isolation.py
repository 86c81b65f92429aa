"""A folder of its own for a child (an agent file's ``isolation: worktree``): what another plugin
offers through ``crab_child_workspaces`` (declared in ``crab_subagents``), and entering and leaving it.

crab-subagents never makes a folder itself and imports no plugin that does: crab-worktree offers
``worktree`` (a git worktree on a branch of its own); another plugin could offer a scratch copy
or a container under another name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import crab

HOOK = "crab_child_workspaces"


@runtime_checkable
class ChildWorkspaces(Protocol):
    """What a plugin offers through ``crab_child_workspaces``: ``name`` (the isolation it gives,
    as an agent file names it), ``enter`` (make a folder for a child of session ``session_id``,
    from the folder that session works in; ``crab.CrabError`` when it cannot) and ``leave`` (the
    child is over: remove the folder when it holds no change, or keep it; one line saying which,
    naming what was kept). Both are awaited: what blocks (git) runs in a thread of theirs."""

    name: str

    async def enter(self, workspace: Path, label: str, session_id: str) -> Path: ...

    async def leave(self, folder: Path) -> str: ...


def offered(found: Sequence[tuple[str, Any]], name: str) -> ChildWorkspaces:
    """The first offer named ``name``; ``crab.ToolError`` saying what to install when none is."""
    names: list[str] = []
    for _plugin, value in found:
        for offer in value or ():
            if isinstance(offer, ChildWorkspaces):
                if offer.name == name:
                    return offer
                names.append(offer.name)
    have = f" (offered: {', '.join(names)})" if names else ""
    raise crab.ToolError(
        f"this agent asks for isolation {name!r} and no plugin offers it{have}: "
        f"install crab-worktree for `worktree`, or remove `isolation` from the agent file"
    )


@dataclass
class Entered:
    """A child's own folder while it runs: where, and who made it (to leave it)."""

    folder: Path
    maker: ChildWorkspaces

    async def leave(self) -> str:
        try:
            return await self.maker.leave(self.folder)
        except crab.CrabError as exc:  # never instead of the child's own outcome
            return f"{self.maker.name} {self.folder} was left as it is: {exc}"


async def enter(handle: crab.AgentHandle, name: str, workspace: Path, label: str, session_id: str) -> Entered:
    """Make a folder for a child of ``session_id`` (working in ``workspace``) through the offer ``name``."""
    maker = offered(handle.collect(HOOK), name)
    try:
        folder = await maker.enter(workspace, label, session_id)
    except crab.CrabError as exc:
        raise crab.ToolError(f"agent {label} needs a {name} of its own and none could be made: {exc}") from None
    return Entered(Path(folder), maker)
