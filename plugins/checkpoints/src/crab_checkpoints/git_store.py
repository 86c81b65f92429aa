"""Checkpoints in a git work tree: private refs, built with a temporary index, never the user's.

A checkpoint is a commit under ``refs/crab/checkpoints/<session>/<n>``: its tree is the work tree
as the turn left it, its parent a commit of the work tree just before the turn's first change
(whose parent is ``HEAD``). Both trees are made with ``GIT_INDEX_FILE`` pointing at a copy of the
user's index in a temporary folder (``git add -A``, ``git write-tree``, ``git commit-tree``), so the
branch, the index, the stash and the reflogs stay as they were; only objects and those refs are
added. Files git ignores are not in the trees, so a turn's change to one cannot be undone.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from crab.tools import write_atomic

from crab_checkpoints.gitrun import Git
from crab_checkpoints.plan import Change, Checkpoint, State, plan_undo, refuse_outside

REF_ROOT = "refs/crab/checkpoints"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}


def ref_part(name: str) -> str:
    """``name`` as one component of a ref (anything but letters, digits, ``.``, ``_``, ``-`` is ``_``)."""
    return _UNSAFE.sub("_", name).strip(".") or "_"


@dataclass(frozen=True, slots=True)
class Listed:
    """A checkpoint as stored: its ref, commit, time (Unix seconds) and label."""

    ref: str
    commit: str
    time: int
    label: str

    @property
    def number(self) -> int:
        return int(self.ref.rsplit("/", 1)[1])


def _raw_changes(raw: bytes) -> tuple[Change, ...]:
    """``git diff-tree -r -z --raw --no-renames`` output as changes (mode and blob id, or None)."""
    fields = raw.split(b"\0")
    changes: list[Change] = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(b":"):
            continue
        old_mode, new_mode, old_id, new_id, _status = meta[1:].decode().split(" ")
        before = None if set(old_id) == {"0"} else (old_mode, old_id)
        after = None if set(new_id) == {"0"} else (new_mode, new_id)
        changes.append(Change(path.decode("utf-8", "surrogateescape"), before, after))
    return tuple(changes)


class GitCheckpoints:
    """One session's checkpoints in the work tree whose top is ``top``."""

    def __init__(self, top: Path, session_id: str, timeout: float = 60.0, keep: int = 50) -> None:
        self.top = top
        self.git = Git(top, timeout)
        self.prefix = f"{REF_ROOT}/{ref_part(session_id)}"
        self.keep = keep
        self.session_id = session_id
        self._before: str | None = None  # the commit of the turn being recorded
        self._ref: str | None = None
        self._label = ""

    # --- recording ----------------------------------------------------------------------------

    async def snapshot(self) -> str:
        """The tree of the work tree now (tracked and untracked files, not ignored ones)."""
        index_path = Path(await self.git.text(["rev-parse", "--git-path", "index"]))
        user_index = index_path if index_path.is_absolute() else self.top / index_path
        with tempfile.TemporaryDirectory(prefix="crab-checkpoint-") as folder:
            index = Path(folder) / "index"
            if user_index.is_file():
                # A copy, read only: git's stat cache in it spares hashing every unchanged file. It
                # keeps the index's mtime, which git's racy-entry check compares with each file's
                # (to the second, in most builds): a new mtime would trust a file rewritten in the
                # second it was staged, at the same size, and miss the change.
                shutil.copy2(user_index, index)
            env = {"GIT_INDEX_FILE": str(index)}
            await self.git.run(["add", "--all", "--ignore-errors"], env=env)
            return await self.git.text(["write-tree"], env=env)

    async def _head(self) -> str | None:
        result = await self.git.run(["rev-parse", "-q", "--verify", "HEAD^{commit}"], check=False)
        return result.stdout.decode().strip() or None if result.returncode == 0 else None

    async def _commit(self, tree: str, parent: str | None, message: str) -> str:
        args = ["commit-tree", "--no-gpg-sign", tree, *(["-p", parent] if parent else []), "-m", message]
        return await self.git.text(args)

    async def begin(self, label: str) -> None:
        """Record the work tree before a turn's first change, as a new checkpoint of this session."""
        tree = await self.snapshot()
        self._label = label
        self._before = await self._commit(tree, await self._head(), f"crab: before {label}")
        listed = await self.listed()
        number = max((item.number for item in listed), default=0) + 1
        self._ref = f"{self.prefix}/{number:06d}"
        await self._settle(tree)
        for old in listed[: max(0, len(listed) + 1 - self.keep)]:
            await self.git.run(["update-ref", "-d", old.ref])

    async def finish(self) -> None:
        """Record the work tree as the turn left it so far (after each of its calls that may write)."""
        if self._before is not None:
            await self._settle(await self.snapshot())

    async def _settle(self, tree: str) -> None:
        if self._before is None or self._ref is None:
            return  # no turn is being recorded
        message = f"crab checkpoint: {self._label}\n\nsession {self.session_id}\n"
        commit = await self._commit(tree, self._before, message)
        await self.git.run(["update-ref", self._ref, commit])

    def end_turn(self) -> None:
        """The turn ended: its next change starts a new checkpoint."""
        self._before = self._ref = None

    # --- reading ------------------------------------------------------------------------------

    async def listed(self) -> list[Listed]:
        """This session's checkpoints, oldest first."""
        return await list_refs(self.git, self.prefix)

    async def changes(self, item: Listed) -> tuple[Change, ...]:
        raw = await self.git.run(["diff-tree", "-r", "-z", "--raw", "--no-renames", f"{item.commit}^", item.commit])
        return _raw_changes(raw.stdout)

    # --- undoing ------------------------------------------------------------------------------

    async def undo(self, count: int) -> str:
        """Put back the files the last ``count`` checkpoints' turns changed (see ``plan_undo``)."""
        chosen: list[Checkpoint] = []
        empty: list[Listed] = []
        for item in reversed(await self.listed()):
            if len(chosen) == count:
                break
            changes = await self.changes(item)
            if changes:
                chosen.append(Checkpoint(item.ref, item.label, changes))  # the key is its ref
            else:
                empty.append(item)  # a turn whose writes were refused or changed nothing
        if len(chosen) < count:
            return nothing_to_undo(len(chosen))
        paths = sorted({change.path for checkpoint in chosen for change in checkpoint.changes})
        now = await self.snapshot()
        target = plan_undo(chosen, await self._states(now, paths))
        refuse_outside(self.top, target)
        for path, state in sorted(target.items()):
            await self._restore(path, state)
        for ref in [*(item.ref for item in empty), *(checkpoint.key for checkpoint in chosen)]:
            await self.git.run(["update-ref", "-d", ref])
        self.end_turn()
        return describe_undo(chosen, target)

    async def _states(self, tree: str, paths: list[str]) -> dict[str, State]:
        states: dict[str, State] = {}
        for start in range(0, len(paths), 200):
            chunk = paths[start : start + 200]
            raw = await self.git.run(["ls-tree", "-r", "-z", "--full-tree", tree, "--", *chunk], env=_LITERAL)
            for entry in raw.stdout.split(b"\0"):
                if not entry:
                    continue
                meta, path = entry.split(b"\t", 1)
                mode, _kind, object_id = meta.decode().split(" ")
                states[path.decode("utf-8", "surrogateescape")] = (mode, object_id)
        return states

    async def _restore(self, path: str, state: State) -> None:
        file = self.top / path
        if state is None:
            if file.is_symlink() or file.exists():
                file.unlink()
            _remove_empty_folders(file.parent, self.top)
            return
        assert isinstance(state, tuple)
        mode, object_id = str(state[0]), str(state[1])
        if mode == "160000":
            return  # a submodule's commit: its own work tree is not crab's to move
        if mode == "120000":
            link = (await self.git.run(["cat-file", "blob", object_id])).stdout
            if file.is_symlink() or file.exists():
                file.unlink()
            file.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.fsdecode(link), file)
            return
        data = (await self.git.run(["cat-file", "--filters", f"--path={path}", object_id])).stdout
        if file.is_symlink():
            file.unlink()
        file.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(file, data)  # keeps the permission bits of a file that is there
        _set_executable(file, mode == "100755")


def _set_executable(file: Path, executable: bool) -> None:
    """Give ``file`` the execute bits git recorded (read bits decide who may run it), keeping the rest."""
    bits = stat.S_IMODE(file.stat().st_mode)
    wanted = bits | ((bits & 0o444) >> 2) if executable else bits & ~0o111
    if wanted != bits:
        os.chmod(file, wanted)


def _remove_empty_folders(folder: Path, top: Path) -> None:
    """Remove ``folder`` and its parents below ``top`` while they are empty (a turn made them)."""
    while folder != top and folder.is_relative_to(top):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def nothing_to_undo(found: int) -> str:
    """What ``/undo N`` says when fewer than N turns of the session changed files."""
    if not found:
        return "nothing to undo: no turn of this session changed files (or they were undone)"
    turns = "1 turn" if found == 1 else f"{found} turns"
    return f"nothing undone: only {turns} of this session changed files; /undo {found} undoes them"


def describe_undo(chosen: list[Checkpoint], target: dict[str, State]) -> str:
    """``undid 2 turns ('fix it', 'add tests'): restored a.py, b.py; removed new.py``."""
    labels = ", ".join(repr(c.label) for c in chosen)
    turns = f"{len(chosen)} turns" if len(chosen) > 1 else "the last turn"
    restored = [path for path, state in sorted(target.items()) if state is not None]
    removed = [path for path, state in sorted(target.items()) if state is None]
    parts = [f"restored {', '.join(restored)}"] if restored else []
    parts += [f"removed {', '.join(removed)}"] if removed else []
    return f"undid {turns} ({labels}): {'; '.join(parts)}"


async def list_refs(git: Git, prefix: str) -> list[Listed]:
    """The checkpoints under ``prefix``, oldest first."""
    fmt = "%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents:subject)"
    out = await git.text(["for-each-ref", f"--format={fmt}", prefix])
    items: list[Listed] = []
    for line in out.splitlines():
        ref, commit, when, subject = line.split("\0", 3)
        if not ref.rsplit("/", 1)[1].isdigit():
            continue
        items.append(Listed(ref, commit, int(when or 0), subject.removeprefix("crab checkpoint: ")))
    return sorted(items, key=lambda item: (item.ref.rsplit("/", 2)[1], item.number))
