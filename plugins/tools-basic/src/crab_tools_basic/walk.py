"""Walking a folder tree the way git sees it: ignore rules honoured, .git and symlinks skipped.

The rules are git's: each folder's .gitignore below the root the path lives in, and inside a
repository its ``info/exclude`` and the user's global excludes file (``git_excludes``); a
deeper file decides before a shallower one, .gitignore before ``info/exclude`` before the
global file.

Every search tool (glob, grep, ls) lists files through here, so they agree on what exists, and
grep's ripgrep and Python back-ends search exactly the same files.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from crab import ToolError
from crab.config import crab_home

from crab_tools_basic import git_excludes
from crab_tools_basic.gitignore import IgnoreFile, is_ignored, load_ignore_file

SKIPPED_FOLDERS = frozenset({".git"})


@dataclass(frozen=True, slots=True)
class Listed:
    """One entry of a folder: its path, its path relative to the walk's scope, and its kind."""

    path: str
    relative: str
    is_dir: bool
    is_file: bool
    is_symlink: bool


@dataclass(frozen=True, slots=True)
class Folder:
    """A folder's visible entries (sorted by name), how many .gitignore hid, and the rules inside it."""

    entries: list[Listed]
    hidden: int
    stack: list[IgnoreFile]


def _relative(scope: Path, folder: Path) -> str:
    return "" if folder == scope else folder.relative_to(scope).as_posix()


def _repository_rules(top: Path, base: str, prefix: str = "") -> list[IgnoreFile]:
    """The global excludes file and ``info/exclude`` of the repository whose work tree is ``top``."""
    found: list[IgnoreFile] = []
    user_file = git_excludes.global_excludes_file()
    if user_file is not None:
        loaded = load_ignore_file(user_file, base, prefix, follow_symlinks=True)
        if loaded is not None:
            found.append(loaded)
    folder = git_excludes.git_dir(top)
    if folder is not None:
        loaded = load_ignore_file(folder / "info" / "exclude", base, prefix)
        if loaded is not None:
            found.append(loaded)
    return found


def _own_rules(scope: Path, folder: Path, names: frozenset[str] | None = None) -> list[IgnoreFile]:
    """What ``folder`` adds to the rules below it: a repository's files if it is a top, its .gitignore.

    ``names`` are its entries when already listed (else they are looked up).
    """
    base = _relative(scope, folder)
    found: list[IgnoreFile] = []
    if (".git" in names) if names is not None else os.path.lexists(folder / ".git"):
        found += _repository_rules(folder, base)
    if names is None or ".gitignore" in names:
        loaded = load_ignore_file(folder / ".gitignore", base)
        if loaded is not None:
            found.append(loaded)
    return found


def parent_stack(scope: Path, folder: Path) -> list[IgnoreFile]:
    """The rules that apply inside ``folder`` from its ancestors, from ``scope`` down (``folder``'s own excluded).

    ``scope`` is the root the path lives in (the workspace, or an extra root); .gitignore files
    above it are not consulted, but when it lies inside a repository, that repository's
    ``info/exclude`` and global excludes apply, anchored at the repository's top.
    """
    stack: list[IgnoreFile] = []
    if not os.path.lexists(scope / ".git"):
        top = git_excludes.enclosing_top(scope.parent) if scope.parent != scope else None
        if top is not None:
            stack += _repository_rules(top, "", scope.relative_to(top).as_posix() + "/")
    if folder == scope:
        return stack
    current = scope
    for part in folder.relative_to(scope).parts:
        stack += _own_rules(scope, current)
        current = current / part
    return stack


def private_folder() -> str:
    """crab's own folder (``$CRAB_HOME``: keys, trusted projects, sessions), as a real path."""
    return os.path.realpath(crab_home())


def list_folder(scope: Path, folder: Path, stack: list[IgnoreFile]) -> Folder:
    """``folder``'s entries that .gitignore does not hide; ``stack`` holds its ancestors' rules.

    ``.git`` is always skipped, and so is crab's own folder when the workspace holds it (crab
    run in ``~``): a walk must not hand ``auth.json`` to grep. An unreadable folder lists as empty.
    """
    base = _relative(scope, folder)
    private = private_folder()
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError:
        return Folder([], 0, stack)
    own = _own_rules(scope, folder, frozenset(e.name for e in entries))
    if own:
        stack = [*stack, *own]
    shown: list[Listed] = []
    hidden = 0
    for entry in entries:
        if entry.name in SKIPPED_FOLDERS or entry.path == private:
            continue
        relative = f"{base}/{entry.name}" if base else entry.name
        try:
            is_symlink = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file(follow_symlinks=False)
        except OSError:
            continue
        if is_ignored(stack, relative, is_dir):
            hidden += 1
            continue
        shown.append(Listed(entry.path, relative, is_dir, is_file, is_symlink))
    return Folder(shown, hidden, stack)


def walk_files(scope: Path, start: Path, stop: threading.Event | None = None) -> Iterator[Listed]:
    """Every regular file under ``start`` that .gitignore does not hide, folder by folder.

    Symlinks are not followed (a link could lead out of the workspace, or into a loop).
    ``start`` itself is searched even when ignored: asking for it is explicit. When ``stop`` is
    set (the call was aborted or timed out) the walk ends with ``ToolError``.
    """
    pending: list[tuple[Path, list[IgnoreFile]]] = [(start, parent_stack(scope, start))]
    while pending:
        if stop is not None and stop.is_set():
            raise ToolError("cancelled")
        folder, stack = pending.pop()
        listing = list_folder(scope, folder, stack)
        subfolders: list[tuple[Path, list[IgnoreFile]]] = []
        for entry in listing.entries:
            if entry.is_dir:
                subfolders.append((Path(entry.path), listing.stack))
            elif entry.is_file:
                yield entry
        # Reversed so that popping from the end visits folders in name order.
        pending.extend(reversed(subfolders))
