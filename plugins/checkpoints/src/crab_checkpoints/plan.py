"""What ``/undo N`` writes back, decided before anything is written: all of it, or a refusal.

A checkpoint lists, per file its turn changed, the state before the turn and the state the turn
left (a content id, or None for "no file"). Undoing the newest N checkpoints walks them newest
first: each file must still be as that turn left it (as the newer turns' undo leaves it), or the
undo is refused, naming the file, because writing it back would lose a change made since by hand.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from crab import CrabError

State = Hashable | None
"""A file's content as a store identifies it (git: mode and blob id; copies: a hash); None: absent."""


@dataclass(frozen=True, slots=True)
class Change:
    """One file a turn changed: its ``path`` (relative to the store's root), before and after."""

    path: str
    before: State
    after: State


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One turn's checkpoint: a ``key`` the store finds it by, a ``label`` for people, its changes."""

    key: str
    label: str
    changes: tuple[Change, ...]


class UndoRefused(CrabError):
    """A file differs from what the turn left: undoing would lose that change."""


def _why(now: State, after: State) -> str:
    if now is None:
        return "it was deleted since"
    if after is None:
        return "it was created again since"
    return "it was changed since"


def plan_undo(newest_first: Sequence[Checkpoint], current: Mapping[str, State]) -> dict[str, State]:
    """The state each file goes back to, or ``UndoRefused`` naming the first file that is not as
    its turn left it (``current``: each path's state now; a path missing from it is absent)."""
    target: dict[str, State] = {}
    for checkpoint in newest_first:
        for change in checkpoint.changes:
            now = target[change.path] if change.path in target else current.get(change.path)
            if now != change.after:
                why = _why(now, change.after)
                raise UndoRefused(
                    f"not undone: {change.path} is not as the turn {checkpoint.label!r} left it ({why}); "
                    "undoing would lose that change. Keep it elsewhere (commit or copy it) and put the file back, "
                    "or undo by hand (crab checkpoints list shows the checkpoints)"
                )
            target[change.path] = change.before
    return target


def refuse_outside(root: Path, paths: Iterable[str]) -> None:
    """``UndoRefused`` when writing one of ``paths`` would go through a symlinked folder to a place
    outside ``root`` (a link made since the turn): an undo writes inside the work tree only."""
    real_root = root.resolve()
    for path in paths:
        parent = (root / path).parent.resolve()
        if not parent.is_relative_to(real_root):
            raise UndoRefused(f"not undone: {path} would be written through a symlink to {parent}, outside {root}")
