"""Worktrees themselves: made from the repository's HEAD on a branch of their own, their changes
summed up, removed only when they hold none, and listed. Every git call is ``gitrun.git``."""

from __future__ import annotations

import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from crab_worktree.gitrun import WorktreeError, git

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
IGNORE_ALL = "# crab-worktree: the worktrees here are checkouts of their own, never part of this one\n*\n"


@dataclass(frozen=True, slots=True)
class Worktree:
    """One worktree crab made: its ``name``, folder, branch, the commit it started from, and the
    folder of the checkout it was made from (``origin``)."""

    name: str
    path: Path
    branch: str
    base: str
    origin: Path
    reused: bool = False
    """Made by an earlier run and entered again (``--worktree NAME`` of a kept one): never removed."""


@dataclass(frozen=True, slots=True)
class Changes:
    """What a worktree holds that its start did not: commits, files changed but not committed,
    and files git ignores (``git worktree remove`` deletes those without a word: a ``.env``, data)."""

    commits: int
    uncommitted: int
    untracked: int
    shortstat: str
    ignored: int = 0

    @property
    def none(self) -> bool:
        return not (self.commits or self.uncommitted or self.untracked or self.ignored)

    def summary(self) -> str:
        parts = []
        if self.commits:
            parts.append(f"{self.commits} commit{'s' if self.commits != 1 else ''}")
        if self.shortstat:
            parts.append(self.shortstat)
        if self.uncommitted:
            parts.append(f"{self.uncommitted} uncommitted")
        if self.untracked:
            parts.append(f"{self.untracked} untracked file{'s' if self.untracked != 1 else ''}")
        if self.ignored:
            plural = "s" if self.ignored != 1 else ""
            parts.append(f"{self.ignored} ignored file{plural} or folder{plural}")
        return ", ".join(parts) or "no changes"


def new_name() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(2)


def create(start: Path, name: str, folder: str, prefix: str) -> tuple[Worktree, Path]:
    """A fresh worktree of the repository ``start`` is in, on branch ``prefix + name`` from its
    HEAD, in ``folder`` (relative to the repository's top); and the folder in it that matches
    ``start`` (a run started in a sub-folder works in the same sub-folder)."""
    name = name or new_name()
    if not NAME.fullmatch(name):
        raise WorktreeError(f"--worktree {name!r}: a name is letters, digits, '.', '_' or '-' (at most 64)")
    found = git(start, "rev-parse", "--show-toplevel", check=False).strip()
    if not found:
        raise WorktreeError(f"--worktree needs a git repository, and {start} is not in one (git init, or leave it out)")
    top = Path(found)
    base = git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).strip()
    if not base:
        raise WorktreeError(f"--worktree needs a commit to start from, and {top} has none yet (commit first)")
    branch = prefix + name
    home = top / folder
    path = home / name
    _within_repository(top, folder, home)
    kept = next((t for t in listing(top, prefix) if t.branch == branch), None)
    if kept is not None and kept.path.resolve() == path.resolve() and path.is_dir():
        # a worktree an earlier run kept: enter it again (its sessions are there, `crab -w NAME -c`)
        start_point = git(top, "merge-base", base, branch, check=False).strip() or base
        return Worktree(name, path, branch, start_point, top, reused=True), _inside(start, top, path)
    if git(top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).strip():
        raise WorktreeError(f"--worktree {name}: the branch {branch} exists already; pick another name")
    if path.exists():
        raise WorktreeError(f"--worktree {name}: {path} exists already; pick another name")
    home.mkdir(parents=True, exist_ok=True)
    ignore = home / ".gitignore"
    if home.is_relative_to(top) and not ignore.exists():
        ignore.write_text(IGNORE_ALL, encoding="utf-8")  # the checkout's status never lists them
    git(top, "worktree", "add", "--quiet", "-b", branch, str(path), base)
    return Worktree(name, path, branch, base, top), _inside(start, top, path)


def _within_repository(top: Path, folder: str, home: Path) -> None:
    """Refuse a ``folder`` inside the repository by its name that a symlink there (the repository's
    own, committed) leads elsewhere: only the user's setting may put worktrees outside it."""
    named = Path(os.path.normpath(top / folder))
    if not named.is_relative_to(top):
        return  # the user's own [plugins.worktree] folder (trust-only) names a place outside
    real = named.resolve()
    if not real.is_relative_to(top.resolve()):
        raise WorktreeError(
            f"--worktree: {named} leads outside the repository (to {real}, through a symlink); remove "
            "the link, or set [plugins.worktree] folder in your user config to where worktrees go"
        )


def _inside(start: Path, top: Path, path: Path) -> Path:
    """The folder of worktree ``path`` that matches ``start`` in the checkout at ``top``."""
    inside = path / start.resolve().relative_to(top.resolve())
    return inside if inside.is_dir() else path


def changes(tree: Worktree) -> Changes:
    """What ``tree`` holds beyond its start (its own HEAD and files, whatever branch it is on)."""
    status = git(tree.path, "status", "--porcelain", "--untracked-files=all").splitlines()
    untracked = sum(1 for line in status if line.startswith("??"))
    # an ignored folder is one line here (a node_modules is not counted file by file)
    ignored = git(tree.path, "status", "--porcelain", "--ignored=traditional", "--untracked-files=normal")
    ignored_count = sum(1 for line in ignored.splitlines() if line.startswith("!!"))
    commits = int(git(tree.path, "rev-list", "--count", f"{tree.base}..HEAD").strip() or 0)
    shortstat = git(tree.path, "diff", "--shortstat", tree.base).strip()
    return Changes(commits, len(status) - untracked, untracked, shortstat, ignored_count)


def leave(tree: Worktree) -> str:
    """Remove ``tree`` and its branch when it holds no change; otherwise keep both and say where."""
    if not tree.path.is_dir():
        return f"worktree {tree.name}: {tree.path} is gone already"
    held = changes(tree)
    if not tree.reused and held.none and git(tree.path, "rev-parse", "HEAD").strip() == tree.base:
        # no --force: git itself refuses a worktree with changes, should one appear meanwhile
        git(tree.origin, "worktree", "remove", str(tree.path))
        branch = git(tree.origin, "rev-parse", "--verify", "--quiet", f"refs/heads/{tree.branch}", check=False)
        if branch.strip() == tree.base:
            git(tree.origin, "branch", "-D", tree.branch)  # it points at the start: nothing is lost
        return f"worktree {tree.name} removed: no changes"
    return (
        f"worktree kept: {tree.path} on branch {tree.branch} ({held.summary()}); "
        f"merge it with `git merge {tree.branch}`, or remove it with `git worktree remove {tree.path}`"
    )


@dataclass(frozen=True, slots=True)
class Listed:
    path: Path
    branch: str
    head: str


def listing(start: Path, prefix: str) -> list[Listed]:
    """The worktrees of ``start``'s repository on a branch under ``prefix`` (crab's), in git's order."""
    found = git(start, "rev-parse", "--show-toplevel", check=False).strip()
    if not found:
        return []
    out: list[Listed] = []
    path, head = "", ""
    for line in [*git(Path(found), "worktree", "list", "--porcelain").splitlines(), ""]:
        if line.startswith("worktree "):
            path = line.removeprefix("worktree ")
        elif line.startswith("HEAD "):
            head = line.removeprefix("HEAD ")
        elif line.startswith("branch refs/heads/"):
            branch = line.removeprefix("branch refs/heads/")
            if branch.startswith(prefix):
                out.append(Listed(Path(path), branch, head))
    return out
