"""Claude Code's ``WorktreeCreate`` and ``WorktreeRemove``, on the hook crab-worktree declares
(``crab_worktree_hooks``): crab-worktree asks ``create`` before it makes a worktree for a subagent
and calls ``remove`` for each worktree it removes, without either plugin importing the other.

- ``WorktreeCreate`` replaces git (as in Claude Code, for SVN, Perforce, Mercurial…): the hook
  gets ``name`` and must print the absolute path of the folder it made; a hook that fails (any
  non-zero exit, a timeout), prints nothing, or prints no existing absolute folder fails the
  creation. Only ``command`` hooks run (an ``http`` hook is one notice), all at once; the first
  in order that prints a path names the folder.
- ``WorktreeRemove`` gets ``worktree_path``; it has no decision control (it cannot keep a
  worktree), and its failure is one notice.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import crab

from crab_hooks.answers import read
from crab_hooks.runner import run_hook
from crab_hooks.runtime import Hooks


class WorktreeEvents:
    """What crab-hooks offers through ``crab_worktree_hooks``, on the run's ``Hooks``."""

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks

    async def create(self, name: str, cwd: Path, session_id: str) -> Path | None:
        """The folder the ``WorktreeCreate`` commands made for ``name`` (None: none is configured).

        They run at once, as every Claude Code event's hooks do; any of them failing fails the
        creation, and the folder is the last line the first of them (in configuration order) that
        printed one printed."""
        hooks = self.hooks
        found = hooks.hooks.commands("WorktreeCreate")
        for command in found:
            if command.kind != "command":
                hooks.notice(f"WorktreeCreate hook {command.command!r} is not run: only command hooks make worktrees")
        commands = [c for c in found if c.kind == "command"]
        if not commands:
            return None
        payload = hooks.event_payload("WorktreeCreate", session_id, cwd, {"name": name})
        runs = await asyncio.gather(*(run_hook(command, payload, cwd) for command in commands))
        for run in runs:
            if run.exit_code != 0 or run.timed_out or run.error is not None:
                said = read(run, "WorktreeCreate").notice or f"WorktreeCreate hook {run.hook.command!r} failed"
                raise crab.UsageError(said)
        printed = [
            (run, lines[-1]) for run in runs if (lines := [x.strip() for x in run.stdout.splitlines() if x.strip()])
        ]
        if not printed:
            raise crab.UsageError(
                "the WorktreeCreate hooks printed nothing; one must print the absolute path of the folder it made"
            )
        run, line = printed[0]
        path = Path(line)
        if not path.is_absolute() or not path.is_dir():
            raise crab.UsageError(
                f"WorktreeCreate hook {run.hook.command!r} printed {line[:200]!r}, which is no folder: it must "
                "print the absolute path of the folder it made (other output goes to stderr)"
            )
        return path

    async def remove(self, path: Path, cwd: Path, session_id: str) -> None:
        """Run the ``WorktreeRemove`` hooks for ``path`` (their exit codes decide nothing)."""
        hooks = self.hooks
        commands = [c for c in hooks.hooks.commands("WorktreeRemove") if c.kind == "command"]
        if not commands:
            return
        payload = hooks.event_payload("WorktreeRemove", session_id, cwd, {"worktree_path": str(path)})
        for command in commands:
            answer = read(await run_hook(command, payload, cwd), "WorktreeRemove")
            if answer.notice:
                hooks.notice(answer.notice)
