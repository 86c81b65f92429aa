"""``bash`` in an editor terminal (``terminal/create`` … ``terminal/release``).

Offered (``override=True``, in place of crab-tools-basic's ``bash``) when the client says it has
terminals: the command runs in the workspace in a terminal the editor shows live, embedded in
the tool call. It is bounded as crab's own is: a timeout (then ``terminal/kill``), an output
limit the editor enforces (``outputByteLimit``), and an abort kills it too; the terminal is
always released. The argv goes through ``crab.processes.wrap_command`` first, so a command
wrapper (crab-sandbox) wraps it as it would wrap crab's own process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import crab
from crab import processes

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0
OUTPUT_BYTES = 30_000
KILL_WAIT = 5.0


@dataclass(frozen=True)
class EditorTerminal(crab.events.Event):
    """A tool call's command runs in editor terminal ``terminal_id`` (the editor embeds it)."""

    type = "acp_terminal"
    call_id: str
    terminal_id: str


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


def editor_bash(client: Callable[[], Any]) -> crab.Tool:
    """The ``bash`` tool, running through ``client()`` (the session's ACP connection)."""

    @crab.tool(permission="exec", override=True, output_limit=None, timeout=MAX_TIMEOUT + 2 * KILL_WAIT)
    async def bash(
        command: Annotated[str, "the shell command (bash -c), run from the workspace root"],
        ctx: crab.ToolContext,
        timeout: Annotated[float | None, "seconds before the command is killed"] = None,
    ) -> crab.ToolResult:
        """Run a shell command in the workspace, in a terminal the editor shows.

        Use it for builds, tests, git and other programs; prefer read, edit, grep and glob for
        files. The output (stdout and stderr together, the last 30 KB) and the exit status
        come back. Timeout: 120 s unless you pass `timeout` (at most 600 s); on timeout the
        command is killed.
        """
        limit = min(timeout if timeout and timeout > 0 else DEFAULT_TIMEOUT, MAX_TIMEOUT)
        argv = processes.wrap_command([_shell(), "-c", command], ctx.workspace)
        conn = client()
        env = [{"name": processes.TAG_VARIABLE, "value": processes.new_tag()}]
        created = await conn.create_terminal(
            session_id=ctx.session_id,
            command=argv[0],
            args=argv[1:],
            cwd=os.fspath(ctx.workspace),
            env=env,
            output_byte_limit=OUTPUT_BYTES,
        )
        terminal = created.terminal_id
        ctx.emit(EditorTerminal(ctx.call_id, terminal))
        timed_out = False
        try:
            try:
                async with asyncio.timeout(limit):
                    await conn.wait_for_terminal_exit(session_id=ctx.session_id, terminal_id=terminal)
            except TimeoutError:
                timed_out = True
                await conn.kill_terminal(session_id=ctx.session_id, terminal_id=terminal)
            output = await conn.terminal_output(session_id=ctx.session_id, terminal_id=terminal)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):  # aborted: the command must not outlive the call
                await asyncio.wait_for(
                    asyncio.shield(conn.kill_terminal(session_id=ctx.session_id, terminal_id=terminal)), KILL_WAIT
                )
            raise
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    asyncio.shield(conn.release_terminal(session_id=ctx.session_id, terminal_id=terminal)), KILL_WAIT
                )
        text = output.output
        if output.truncated:
            text = f"[output cut to its last {OUTPUT_BYTES} bytes]\n{text}"
        status = output.exit_status
        if timed_out:
            return crab.ToolResult(f"{text}\n[killed: timed out after {limit:g} s]", is_error=True)
        code = status.exit_code if status is not None else None
        signal = status.signal if status is not None else None
        if signal:
            return crab.ToolResult(f"{text}\n[killed by signal {signal}]", is_error=True)
        return crab.ToolResult(f"{text}\n[exit code {code}]" if code else text or "[no output]", is_error=bool(code))

    return bash
