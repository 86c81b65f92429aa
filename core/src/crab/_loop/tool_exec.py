"""Carrying out one ``crab.Tool``: ``run_tool`` (arguments prepared and checked, the handler run, a
``ToolError`` or oversized output turned into a result for the model) and ``preview_diffs``."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import Any

from crab._contracts.errors import ToolError
from crab._contracts.events import FileDiff
from crab._contracts.tools import PREVIEW_TIMEOUT, Tool, ToolContext, ToolResult
from crab._system.threads import run_in_thread
from crab._values.tool_decorator import as_result
from crab._values.tool_schema import validate
from crab._values.truncate import describe, truncate


async def run_tool(tool: Tool, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    """Validate ``arguments`` and run ``tool``; tool-level failures come back as error results.

    A ``blocking`` handler runs in a daemon thread of its own, abandoned at a cancel (the call's
    timeout or an abort) with ``ctx.cancelled`` set. The processes the call starts are wrapped
    knowing whose they are (``crab.processes``).
    """
    args = dict(arguments)
    if tool.prepare_arguments is not None:
        try:
            args = tool.prepare_arguments(args)
        except (TypeError, ValueError) as exc:
            return ToolResult(f"invalid arguments for {tool.name}: {exc}", is_error=True)
    if tool.validate_arguments:
        problem = validate(args, tool.parameters)
        if problem:
            return ToolResult(f"invalid arguments for {tool.name}: {problem}", is_error=True)
    from crab import processes

    try:
        with processes._tool_call(tool.name, tool.permission, ctx):
            if tool.blocking:
                value = await run_in_thread(lambda: tool.handler(args, ctx), {}, ctx)
            else:
                value = tool.handler(args, ctx)
            if inspect.isawaitable(value):
                value = await value
    except ToolError as exc:
        return limit_output(tool, ToolResult(str(exc) or f"{tool.name} failed", is_error=True))
    return limit_output(tool, as_result(value))


async def preview_diffs(tool: Tool, arguments: Mapping[str, Any], ctx: ToolContext) -> tuple[FileDiff, ...]:
    """The diffs ``tool`` called with ``arguments`` would make, or ``()``: no ``preview``, arguments
    that do not pass, a preview that fails (the call itself will say why) or takes over
    ``PREVIEW_TIMEOUT`` seconds."""
    preview = tool.preview
    if preview is None:
        return ()
    args = dict(arguments)
    try:
        if tool.prepare_arguments is not None:
            args = tool.prepare_arguments(args)
        if tool.validate_arguments and validate(args, tool.parameters):
            return ()
        async with asyncio.timeout(PREVIEW_TIMEOUT):
            # No ctx for the thread: a preview given up must not mark the call itself cancelled.
            diffs = await run_in_thread(lambda: preview(args, ctx), {})
    except (Exception, TimeoutError):
        return ()
    return tuple(d for d in diffs if isinstance(d, FileDiff))


def limit_output(tool: Tool, result: ToolResult) -> ToolResult:
    """``result`` with its content cut to ``tool.output_limit`` and a note saying so."""
    if tool.output_limit is None:
        return result
    text, cut = truncate(result.content, tool.output_limit)
    if cut is None:
        return result
    note = describe(cut, tool.output_limit, "ask for a narrower slice to see the rest")
    return ToolResult(
        f"{text.rstrip(chr(10))}\n{note}", result.is_error, result.details, diffs=result.diffs, images=result.images
    )
