"""Running one hook: ``bash -c COMMAND`` with the event as JSON on stdin, or for an ``http`` hook
the event as the body of a POST to its URL; both bounded by the hook's timeout.

Every start goes through ``crab.processes`` (its own process group, tagged, tracked), so a hook
still running when crab exits, when the turn is aborted or when its timeout passes is ended with
all its children. What it prints is read up to ``MAX_OUTPUT`` bytes per stream (the rest is
drained and dropped), so a chatty hook can neither fill memory nor stall on a full pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import re
import shutil
import urllib.error
import urllib.request
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
    status: int | None = None
    """An ``http`` hook's HTTP status (None for a command, or when no answer came)."""


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


_ENV_NAME = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def header_value(value: str, allowed: tuple[str, ...]) -> str:
    """``value`` with ``$VAR`` and ``${VAR}`` filled from the environment for the names in
    ``allowed`` (``allowedEnvVars``), every other name replaced by nothing, as Claude Code does."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return os.environ.get(name, "") if name in allowed else ""

    return _ENV_NAME.sub(fill, value)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is the hook's answer (its 3xx status), never followed: urllib would send the
    hook's headers, with the secrets its ``allowedEnvVars`` put there, on to wherever it points."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _post(hook: HookCommand, data: bytes) -> tuple[int, bytes]:
    """POST ``data`` to the hook's URL: (status, the first ``MAX_OUTPUT`` bytes of the body)."""
    headers = {name: header_value(value, hook.allowed_env) for name, value in hook.headers}
    headers["Content-Type"] = "application/json"
    request = urllib.request.Request(hook.command, data=data, headers=headers, method="POST")
    try:
        with _OPENER.open(request, timeout=hook.timeout) as response:
            return response.status, response.read(MAX_OUTPUT)
    except urllib.error.HTTPError as exc:
        with contextlib.suppress(Exception):
            exc.close()
        return exc.code, b""


async def _run_http(hook: HookCommand, data: bytes) -> HookRun:
    try:
        status, body = await asyncio.wait_for(asyncio.to_thread(_post, hook, data), hook.timeout)
    except TimeoutError:
        return HookRun(hook, None, "", "", timed_out=True)
    except (OSError, ValueError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or exc
        return HookRun(hook, None, "", "", error=f"{type(exc).__name__}: {reason}")
    return HookRun(hook, 0 if 200 <= status < 300 else None, body.decode("utf-8", "replace"), "", status=status)


async def run_hook(hook: HookCommand, event: dict[str, Any], cwd: Path) -> HookRun:
    """Run ``hook`` once with ``event`` on stdin (or as an ``http`` hook's request body); never
    raises except on cancellation (a command's process group is ended first)."""
    data = json.dumps(event, ensure_ascii=False, default=str).encode("utf-8")
    if hook.kind == "http":
        return await _run_http(hook, data)
    tag = processes.new_tag()
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(hook.project_dir)}
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
