"""Running one hook command: ``bash -c COMMAND`` with the event as JSON on stdin, bounded.

Every start goes through ``crab.processes`` (its own process group, tagged, tracked), so a hook
still running when crab exits, when the turn is aborted or when its timeout passes is ended with
all its children. What it prints is read up to ``MAX_OUTPUT`` bytes per stream (the rest is
drained and dropped), so a chatty hook can neither fill memory nor stall on a full pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crab import processes

from crab_hooks.sources import HookCommand

MAX_OUTPUT = 256 * 1024
"""Bytes kept of a hook's stdout and of its stderr."""
GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL when a hook is ended."""


@dataclass(frozen=True, slots=True)
class HookRun:
    """How one hook command ended: exit code (None when it did not finish), stdout, stderr."""

    hook: HookCommand
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    error: str | None = None
    """Why it could not start (no shell, a missing folder), when it did not."""


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


async def _read_capped(stream: asyncio.StreamReader | None) -> bytes:
    if stream is None:
        return b""
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < MAX_OUTPUT:
            kept += chunk[: MAX_OUTPUT - len(kept)]
    return bytes(kept)


async def _feed(stdin: asyncio.StreamWriter | None, data: bytes) -> None:
    if stdin is None:
        return
    # A hook that never reads its input (or exits first) must not fail the run: its exit code says.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.close()


async def run_hook(hook: HookCommand, event: dict[str, Any], cwd: Path) -> HookRun:
    """Run ``hook`` once with ``event`` on stdin; never raises except on cancellation (the
    process group is ended first)."""
    tag = processes.new_tag()
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(hook.project_dir)}
    data = json.dumps(event, ensure_ascii=False, default=str).encode("utf-8")
    try:
        process = await processes.start(  # tracked; a cancel mid-start ends what started
            [_shell(), "-c", hook.command],
            tag,
            env=env,
            cwd=str(cwd),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        return HookRun(hook, None, "", "", error=f"{type(exc).__name__}: {exc.strerror or exc}")
    finished = False
    try:
        work = asyncio.gather(
            _read_capped(process.stdout), _read_capped(process.stderr), _feed(process.stdin, data), process.wait()
        )
        try:
            out, err, _, code = await asyncio.wait_for(work, hook.timeout)
        except TimeoutError:
            return HookRun(hook, None, "", "", timed_out=True)
        finished = True
        return HookRun(hook, code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
    finally:
        if not finished:
            await asyncio.to_thread(processes.terminate, process.pid, tag, GRACE)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), GRACE * 4)
        processes.untrack(process.pid)
