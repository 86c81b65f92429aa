"""``!cmd``: a shell command a person types, gated like the bash tool, run in the workspace through
``crab.processes.wrap_command`` (so a sandbox wraps it too: the tool ``!``, or ``!keyboard`` when
typed at ``crab chat``'s keyboard, ``KEYBOARD_TOOL``). Core's own feature beside its ``/commands``:
the agent routes a ``!`` line to the ``shell_input`` the composition root gives it (``Agent.shell``)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from crab._contracts.commands import CommandResult
from crab._contracts.interception import Answer, PermissionRequest
from crab._contracts.messages import ToolCall
from crab._contracts.tools import Tool, ToolContext, ToolResult
from crab._contracts.truncate import OutputLimit
from crab._host.plugin_host import PluginHost
from crab._loop.tool_exec import run_tool
from crab._values.truncate import describe, truncate

_LIMIT = OutputLimit(lines=400, bytes=20_000, keep="tail")
SHELL_TOOL = "!"
"""The name a ``!cmd`` has as a tool call, for the gate and for policy plugins."""

KEYBOARD_TOOL = "!keyboard"
"""The tool name a command wrapper sees (``crab.processes.Launch.tool``) for a ``!cmd`` typed at
the keyboard; one from anywhere else is ``SHELL_TOOL``."""

ContextFactory = Callable[[ToolCall, Tool], ToolContext]


def one_line(command: str) -> str | None:
    """The command when it is a single line, else None (``splitlines`` breaks at every line end)."""
    lines = command.strip().splitlines()
    return lines[0].strip() if len(lines) == 1 else None


def shell_tool(timeout: float, *, keyboard: bool = False) -> Tool:
    """The ``exec`` tool a ``!cmd`` is gated (and run) as; ``keyboard``: typed at the keyboard."""
    from crab import processes

    async def run(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        with processes._tool_call(KEYBOARD_TOOL if keyboard else SHELL_TOOL, "exec", ctx):
            result = await run_shell_command(str(arguments["command"]), ctx.workspace, timeout)
        return ToolResult(result.text, result.is_error)

    return Tool(
        name=SHELL_TOOL,
        description="A shell command the user typed after ! (run with sh -c in the workspace).",
        parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        handler=run,
        permission="exec",
        exclusive=True,
        timeout=timeout,
        output_limit=None,  # run_shell_command keeps the tail itself
    )


async def _typed(request: PermissionRequest) -> Answer:
    return "once"  # the person typed this very command: that is their answer


async def gate(host: PluginHost, call: ToolCall, tool: Tool, ctx: ToolContext) -> ToolCall | str:
    """The call as the ``crab_before_tool_call`` interceptors leave it, or the reason it is refused.

    The host's dispatcher fails closed like it does for tool calls: an interceptor that raises, or
    one that failed earlier (the permission gate included), refuses.
    """
    decided, denied = await host.dispatch.before_tool_call(call, tool, ctx)
    if denied is not None:
        return denied.reason
    command = decided.arguments.get("command")
    line = one_line(command) if isinstance(command, str) else None
    if line is None:
        return "Refused: a plugin rewrote the command into something that is not one line."
    return replace(decided, arguments={"command": line})


async def shell_input(
    host: PluginHost,
    command: str,
    make_context: ContextFactory,
    *,
    timeout: float,
    local: bool,
    keyboard: bool = False,
) -> CommandResult:
    """Decide on one ``!cmd`` and run it when allowed.

    ``!`` is for a person at the keyboard: remote channels never run it. It is one line: input
    after ``!`` spanning several lines is refused whole (piped text is not a shell script). It goes
    through every ``crab_before_tool_call`` hook, the permission gate last, as a call of the
    ``exec`` tool ``!``, exactly like the bash tool: ``--yolo`` allows it, ``--read-only`` refuses
    it, and ``ask`` asks, so it is refused where crab cannot ask. In interactive ``crab chat``
    (``keyboard``) the typed line is the user's answer, so the gate does not ask again, though
    ``--read-only`` still refuses.
    """
    if not local:
        return CommandResult("!commands only run from a local terminal", is_error=True)
    line = one_line(command)
    if line is None:
        count = len(command.strip().splitlines())
        return CommandResult(
            f"Refused: a !command is one line, and this input has {count} lines; none of them ran. "
            "Type one command after !, or ask the model to run a script.",
            is_error=True,
        )
    tool = shell_tool(timeout, keyboard=keyboard)
    call = ToolCall(f"shell_{secrets.token_hex(4)}", SHELL_TOOL, {"command": line})
    ctx = make_context(call, tool)
    if keyboard:
        ctx = replace(ctx, ask=_typed)
    decided = await gate(host, call, tool, ctx)
    if isinstance(decided, str):
        return CommandResult(decided, is_error=True)
    result = await run_tool(tool, decided.arguments, ctx)
    return CommandResult(result.content, is_error=result.is_error)


_KEEP_BYTES = 4 * _LIMIT.bytes
"""Bytes of output held while a command runs: its tail, more than ``_LIMIT`` shows."""


async def _read_tail(stream: asyncio.StreamReader) -> tuple[bytes, int, int]:
    """The last ``_KEEP_BYTES`` of ``stream``, and how many bytes and newlines it carried in all.

    Memory stays bounded however much a command prints (``!yes`` used to grow crab without end).
    """
    tail = bytearray()
    total = newlines = 0
    while chunk := await stream.read(65536):
        total += len(chunk)
        newlines += chunk.count(b"\n")
        tail += chunk
        if len(tail) > 2 * _KEEP_BYTES:
            del tail[: len(tail) - _KEEP_BYTES]
    return bytes(tail), total, newlines


def _shown(tail: bytes, total: int, newlines: int) -> str:
    """The tail within ``_LIMIT``, after a note that counts what the whole output held."""
    text, cut = truncate(tail.decode("utf-8", "replace"), _LIMIT)
    if cut is None:
        return text
    if total > len(tail):
        lines = newlines + (0 if tail.endswith(b"\n") else 1)
        cut = replace(cut, total_lines=lines, total_bytes=total)
    return f"{describe(cut, _LIMIT)}\n{text}"


async def run_shell_command(command: str, cwd: Path, timeout: float) -> CommandResult:
    """Run ``command`` with ``sh -c`` as a tracked process group (``crab.processes``), as the bash
    tool does: on timeout or cancellation the group and its tagged descendants are ended, and what
    it leaves running is ended when crab exits (``setsid`` ones too, crab being a subreaper).

    It starts as ``sh -c command`` through ``processes.wrap_command``: a sandbox may wrap it, or
    refuse it with ``crab.ToolError``, which ``run_tool`` makes the result. Only the tail of the
    output is kept while it runs (``_read_tail``).
    """
    from crab import processes

    tag = processes.new_tag()
    argv = processes.wrap_command(["sh", "-c", command], cwd)
    process = await processes.start(
        argv,
        tag,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    try:
        tail, total, newlines = await asyncio.wait_for(_read_tail(process.stdout), timeout)
        await process.wait()
    except (TimeoutError, asyncio.CancelledError) as exc:
        await asyncio.to_thread(processes.terminate, process.pid, tag, 0.5)
        await process.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        return CommandResult(f"timed out after {timeout:g} s and was killed", is_error=True)
    finally:
        if process.returncode is not None:
            processes.untrack(process.pid)
    text = _shown(tail, total, newlines)
    code = process.returncode or 0
    if code:
        return CommandResult(f"{text.rstrip()}\n(exit code {code})".lstrip(), is_error=True)
    return CommandResult(text.rstrip())
