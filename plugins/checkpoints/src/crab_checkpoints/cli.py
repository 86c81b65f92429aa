"""``crab checkpoints list``: every checkpoint of this folder, one line each, oldest first."""

from __future__ import annotations

import asyncio
import datetime
import json
import sys
from pathlib import Path

from crab import Config
from crab.config import crab_home

from crab_checkpoints.git_store import REF_ROOT, GitCheckpoints, list_refs
from crab_checkpoints.gitrun import Git, work_tree_top
from crab_checkpoints.settings import load_settings


def _when(seconds: int) -> str:
    return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M")


async def _git_lines(top: Path, timeout: float) -> list[str]:
    lines: list[str] = []
    for item in await list_refs(Git(top, timeout), REF_ROOT):
        session = item.ref.rsplit("/", 2)[1]
        changes = await GitCheckpoints(top, session, timeout).changes(item)
        files = ", ".join(change.path for change in changes[:5]) + (
            f" and {len(changes) - 5} more" if len(changes) > 5 else ""
        )
        lines.append(f"{session}  #{item.number}  {_when(item.time)}  {item.label!r}  {files or '(no changes)'}")
    return lines


def _copy_lines(folder: Path, home: Path) -> list[str]:
    lines: list[str] = []
    root = home / "checkpoints"
    if not root.is_dir():
        return lines
    for session in sorted(p for p in root.iterdir() if p.is_dir()):
        for checkpoint in sorted((p for p in session.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
            try:
                manifest = json.loads((checkpoint / "manifest.json").read_text())
            except (OSError, ValueError):
                continue
            if manifest.get("root") != str(folder):
                continue
            changed = [path for path, entry in sorted(manifest["files"].items()) if entry["before"] != entry["after"]]
            files = ", ".join(changed) or "(no changes)"
            label = manifest.get("label", "")
            lines.append(
                f"{session.name}  #{int(checkpoint.name)}  {_when(manifest.get('time', 0))}  {label!r}  {files}"
            )
    return lines


def list_checkpoints(config: Config, folder: Path | None = None) -> int:
    """Print the checkpoints of ``folder`` (default: the current one); 0, or 1 when git failed."""
    from crab_checkpoints.gitrun import GitError

    settings = load_settings(config.plugin_settings("checkpoints"))
    here = (folder or Path.cwd()).resolve()
    try:
        top = asyncio.run(work_tree_top(here, settings.git_timeout))
        lines = (
            asyncio.run(_git_lines(top, settings.git_timeout)) if top is not None else _copy_lines(here, crab_home())
        )
    except GitError as exc:
        print(f"crab: {exc}", file=sys.stderr)
        return 1
    if not lines:
        where = f"the git work tree {top}" if top is not None else str(here)
        print(f"no checkpoints in {where}")
        return 0
    print("session  number  time  turn  files")
    for line in lines:
        print(line)
    return 0
