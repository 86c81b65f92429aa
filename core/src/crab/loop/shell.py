"""``!cmd`` from a local channel: run a shell command in the workspace and show its output."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from crab.commands import CommandResult
from crab.truncate import OutputLimit, describe, truncate

_LIMIT = OutputLimit(lines=400, bytes=20_000, keep="tail")


async def run_shell_command(command: str, cwd: Path, timeout: float) -> CommandResult:
    """Run ``command`` with ``sh -c`` in its own process group; kill the group on timeout."""
    process = await asyncio.create_subprocess_shell(
        command,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        await process.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        return CommandResult(f"timed out after {timeout:g} s and was killed", is_error=True)
    text, cut = truncate(output.decode("utf-8", "replace"), _LIMIT)
    if cut is not None:
        text = f"{describe(cut, _LIMIT)}\n{text}"
    code = process.returncode or 0
    if code:
        return CommandResult(f"{text.rstrip()}\n(exit code {code})".lstrip(), is_error=True)
    return CommandResult(text.rstrip())
