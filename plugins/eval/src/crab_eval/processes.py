"""One bounded child process for ``crab eval``: its own process group, ended on timeout or cancel."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from crab import processes

GRACE = 3.0
"""Seconds a ``crab run`` gets after SIGTERM to settle its session before it is killed."""


@dataclass(frozen=True)
class Finished:
    code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False


async def run_bounded(argv: Sequence[str], cwd: Path, timeout: float, env: Mapping[str, str] | None = None) -> Finished:
    """Run ``argv`` in ``cwd`` for at most ``timeout`` seconds; a cancel ends it (and what it started)."""
    tag = processes.new_tag()
    child = await processes.start(  # tracked; a cancel mid-start ends what started
        argv,
        tag,
        env=env,
        grace=GRACE,
        cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(child.communicate(), timeout)
    except TimeoutError:
        await _end(child, tag)
        return Finished(None, "", "", timed_out=True)
    except asyncio.CancelledError:
        await _end(child, tag)
        raise
    finally:
        processes.untrack(child.pid)
    return Finished(child.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


async def _end(child: asyncio.subprocess.Process, tag: str) -> None:
    await asyncio.to_thread(processes.terminate, child.pid, tag, GRACE)
    with contextlib.suppress(ProcessLookupError):
        await child.wait()
