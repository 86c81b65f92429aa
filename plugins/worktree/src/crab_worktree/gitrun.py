"""Running git for crab-worktree: through ``crab.processes`` (a tracked process group that crab's
exit ends), bounded in time, its failure one line saying what went wrong."""

from __future__ import annotations

import threading
from pathlib import Path

import crab
from crab import processes

TIMEOUT = 120.0
"""Seconds one git command may take: a checkout of a large repository is the slow one."""


class WorktreeError(crab.UsageError):
    """A worktree could not be made, read or removed; the message says what to do."""


def git(cwd: Path, *args: str, timeout: float = TIMEOUT, check: bool = True) -> str:
    """git's stdout for ``args`` in ``cwd``; ``WorktreeError`` when it fails (``check``) or hangs."""
    stop = threading.Event()
    timer = threading.Timer(timeout, stop.set)
    timer.daemon = True
    timer.start()
    try:
        done = processes.run_bounded(["git", "-c", "core.quotePath=false", *args], stop, cwd=cwd)
    except FileNotFoundError:
        raise WorktreeError("git is not installed: --worktree needs it (apt-get install git)") from None
    except processes.Stopped:
        raise WorktreeError(f"git {args[0]} took more than {timeout:g} s in {cwd}") from None
    finally:
        timer.cancel()
    if check and done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise WorktreeError(f"git {' '.join(args[:2])} failed in {cwd}: {said[-1] if said else done.returncode}")
    return done.stdout.decode(errors="replace")
