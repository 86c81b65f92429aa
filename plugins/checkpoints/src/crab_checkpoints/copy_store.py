"""Checkpoints outside git: copies of the files a turn's write calls are about to change.

Before each write call of a turn the files its tool says it will change (``Tool.preview``) are
copied, once per turn, under ``$CRAB_HOME/checkpoints/<session>/<n>/`` with a manifest of each
file's hash before and after; ``/undo`` writes the copies back. Bounded: a file over
``max_file_bytes`` is not copied (that turn cannot be undone), and the oldest checkpoints go
once the session's copies pass ``max_total_bytes`` or ``keep`` checkpoints. Only tools that can
tell which files they write are covered (``edit``, ``write``), not ``bash``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from crab.tools import write_atomic

from crab_checkpoints.git_store import describe_undo, nothing_to_undo, ref_part
from crab_checkpoints.plan import Change, Checkpoint, State, UndoRefused, plan_undo, refuse_outside

MANIFEST = "manifest.json"
TOO_LARGE = "too-large"


def _digest(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


class CopyCheckpoints:
    """One session's checkpoints for the workspace ``root``, kept in ``folder``."""

    def __init__(
        self,
        root: Path,
        folder: Path,
        *,
        keep: int = 50,
        max_file_bytes: int = 10_000_000,
        max_total_bytes: int = 200_000_000,
    ) -> None:
        self.root = root
        self.folder = folder
        self.keep = keep
        self.max_file_bytes = max_file_bytes
        self.max_total_bytes = max_total_bytes
        self._current: Path | None = None
        self._manifest: dict[str, Any] = {}

    @classmethod
    def for_session(cls, root: Path, home: Path, session_id: str, **limits: int) -> CopyCheckpoints:
        return cls(root, home / "checkpoints" / ref_part(session_id), **limits)

    # --- recording ----------------------------------------------------------------------------

    def numbered(self) -> list[Path]:
        """This session's checkpoint folders, oldest first."""
        if not self.folder.is_dir():
            return []
        found = [p for p in self.folder.iterdir() if p.name.isdigit() and (p / MANIFEST).is_file()]
        return sorted(found, key=lambda p: int(p.name))

    def begin(self, label: str) -> None:
        """Start the checkpoint of a turn that is about to write."""
        existing = self.numbered()
        number = int(existing[-1].name) + 1 if existing else 1
        self._current = self.folder / f"{number:06d}"
        (self._current / "files").mkdir(parents=True)
        self._manifest = {"label": label, "time": int(time.time()), "root": str(self.root), "files": {}}
        self._save()
        self._prune()

    def remember(self, paths: Iterable[str]) -> None:
        """Copy each of ``paths`` (relative to the root) the first time this turn is about to write it."""
        if self._current is None:
            return
        files: dict[str, Any] = self._manifest["files"]
        for path in paths:
            if path in files:
                continue
            source = self.root / path
            entry: dict[str, Any] = {"before": None, "after": None}
            if source.is_file():
                size = source.stat().st_size
                if size > self.max_file_bytes:
                    entry["before"] = TOO_LARGE
                else:
                    data = source.read_bytes()
                    entry["before"] = hashlib.sha256(data).hexdigest()
                    entry["copy"] = f"files/{len(files):06d}"
                    write_atomic(self._current / entry["copy"], data)
            files[path] = entry
        self._save()

    def settle(self, paths: Iterable[str]) -> None:
        """Record how a write call left ``paths`` (and every file this turn copied)."""
        if self._current is None:
            return
        files: dict[str, Any] = self._manifest["files"]
        for path in {*paths, *files} & set(files):
            files[path]["after"] = _digest(self.root / path)
        self._save()

    def end_turn(self) -> None:
        self._current = None
        self._manifest = {}

    def _save(self) -> None:
        assert self._current is not None
        write_atomic(self._current / MANIFEST, json.dumps(self._manifest, indent=1).encode())

    def _prune(self) -> None:
        folders = self.numbered()
        sizes = [sum(f.stat().st_size for f in (p / "files").glob("*")) for p in folders]
        while folders[:-1] and (len(folders) > self.keep or sum(sizes) > self.max_total_bytes):
            shutil.rmtree(folders.pop(0), ignore_errors=True)
            sizes.pop(0)

    # --- undoing ------------------------------------------------------------------------------

    def _checkpoint(self, folder: Path) -> tuple[Checkpoint, dict[str, Any]]:
        manifest = json.loads((folder / MANIFEST).read_text())
        changes = tuple(
            Change(path, entry["before"], entry["after"])
            for path, entry in sorted(manifest["files"].items())
            if entry["before"] != entry["after"]
        )
        return Checkpoint(str(folder), manifest.get("label", ""), changes), manifest

    def listed(self) -> list[tuple[Path, Checkpoint, dict[str, Any]]]:
        return [(folder, *self._checkpoint(folder)) for folder in self.numbered()]

    def undo(self, count: int) -> str:
        """Write back the copies of the last ``count`` turns that changed files (see ``plan_undo``)."""
        chosen: list[tuple[Path, Checkpoint, dict[str, Any]]] = []
        empty: list[Path] = []
        for folder, checkpoint, manifest in reversed(self.listed()):
            if len(chosen) == count:
                break
            if checkpoint.changes:
                chosen.append((folder, checkpoint, manifest))
            else:
                empty.append(folder)  # a turn whose writes were refused or changed nothing
        if len(chosen) < count:
            return nothing_to_undo(len(chosen))
        for _, checkpoint, _ in chosen:
            for change in checkpoint.changes:
                if change.before == TOO_LARGE:
                    raise UndoRefused(
                        f"not undone: {change.path} was larger than max_file_bytes when the turn "
                        f"{checkpoint.label!r} changed it, so no copy was kept"
                    )
        current: dict[str, State] = {}
        for _, checkpoint, _ in chosen:
            for change in checkpoint.changes:
                current[change.path] = _digest(self.root / change.path)
        target = plan_undo([c for _, c, _ in chosen], current)
        refuse_outside(self.root, target)
        # Newest first: the oldest copy of a file wins, and that is the state the plan goes back to.
        copies = {
            path: folder / entry["copy"]
            for folder, _, manifest in chosen
            for path, entry in manifest["files"].items()
            if entry.get("copy")
        }
        for path, state in sorted(target.items()):
            file = self.root / path
            if state is None:
                file.unlink(missing_ok=True)
            else:
                write_atomic(file, copies[path].read_bytes())
        for folder in [*(folder for folder, _, _ in chosen), *empty]:
            shutil.rmtree(folder, ignore_errors=True)
        self.end_turn()
        return describe_undo([c for _, c, _ in chosen], target)
