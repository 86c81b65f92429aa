"""Announcing worktrees to other plugins through the hook crab-worktree declares,
``crab_worktree_hooks`` (crab-hooks runs Claude Code's ``WorktreeCreate`` and ``WorktreeRemove``
on it): a plugin may make a worktree instead of git, and hears of each one removed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

HOOK = "crab_worktree_hooks"


def offers(found: Sequence[tuple[str, Any]]) -> list[Any]:
    """Every object the plugins offered (``AgentHandle.collect(HOOK)``), in plugin order."""
    return [offer for _plugin, value in found for offer in value or ()]


async def made_by_hooks(hooks: Sequence[Any], name: str, cwd: Path, session_id: str) -> Path | None:
    """The folder the first offer made for worktree ``name`` instead of git (None: git makes it);
    an offer's ``crab.CrabError`` (its hook failed) fails the creation."""
    for offer in hooks:
        made = await offer.create(name, cwd, session_id)
        if made is not None:
            return Path(made)
    return None


async def removed(hooks: Sequence[Any], path: Path, cwd: Path, session_id: str) -> None:
    """Tell every offer that the worktree at ``path`` was (or, one a hook made, is to be) removed."""
    for offer in hooks:
        await offer.remove(path, cwd, session_id)
