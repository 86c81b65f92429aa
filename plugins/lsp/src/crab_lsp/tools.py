"""crab-lsp's tools: ``diagnostics``, ``definition``, ``references``, ``hover`` and ``symbols``,
each read-only and bounded (the server's timeout, the result's size)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import crab
from crab import ToolContext, ToolResult

from crab_lsp import text
from crab_lsp.runtime import Lsp, Refused

TIMEOUT = 120.0
"""Seconds a tool call may take: a server's start and one request fit in it."""


def make_tools(get: Callable[[Path], Lsp | None]) -> list[crab.Tool]:
    """The tools, asking the ``Lsp`` of the call's workspace (``get``)."""

    async def run(ctx: ToolContext, work: Callable[[Lsp], Awaitable[str]]) -> ToolResult:
        lsp = get(ctx.workspace)
        if lsp is None:
            return ToolResult("crab-lsp has not started (no agent is running)", is_error=True)
        try:
            return ToolResult(await work(lsp))
        except Refused as exc:
            return ToolResult(str(exc), is_error=True)

    @crab.tool(name="diagnostics", timeout=TIMEOUT)
    async def diagnostics(path: str, ctx: ToolContext) -> ToolResult:
        """Errors and warnings the language servers report for a file (errors first).

        Args:
            path: the file, relative to the workspace.
        """
        return await run(ctx, lambda lsp: _said(lsp.diagnostics(path), f"no diagnostics for {path}"))

    @crab.tool(name="definition", timeout=TIMEOUT)
    async def definition(path: str, line: int, column: int, ctx: ToolContext) -> ToolResult:
        """Where the symbol at a position is defined (path:line:column and that line).

        Args:
            path: the file, relative to the workspace.
            line: the line, from 1.
            column: the column of a character of the symbol, from 1.
        """

        async def work(lsp: Lsp) -> str:
            found = text.locations(await lsp.ask("textDocument/definition", path, line, column), lsp.workspace)
            return "\n".join(found) or f"no definition found at {path}:{line}:{column}"

        return await run(ctx, work)

    @crab.tool(name="references", timeout=TIMEOUT)
    async def references(path: str, line: int, column: int, ctx: ToolContext) -> ToolResult:
        """Every place the symbol at a position is used, its declaration included.

        Args:
            path: the file, relative to the workspace.
            line: the line, from 1.
            column: the column of a character of the symbol, from 1.
        """

        async def work(lsp: Lsp) -> str:
            found = text.locations(await lsp.ask("textDocument/references", path, line, column), lsp.workspace)
            return "\n".join(found) or f"no references found at {path}:{line}:{column}"

        return await run(ctx, work)

    @crab.tool(name="hover", timeout=TIMEOUT)
    async def hover(path: str, line: int, column: int, ctx: ToolContext) -> ToolResult:
        """The type and documentation of the symbol at a position.

        Args:
            path: the file, relative to the workspace.
            line: the line, from 1.
            column: the column of a character of the symbol, from 1.
        """

        async def work(lsp: Lsp) -> str:
            return (
                text.hover(await lsp.ask("textDocument/hover", path, line, column))
                or f"nothing at {path}:{line}:{column}"
            )

        return await run(ctx, work)

    @crab.tool(name="symbols", timeout=TIMEOUT)
    async def symbols(path: str, ctx: ToolContext) -> ToolResult:
        """The classes, functions and other symbols of a file, nested, with their lines.

        Args:
            path: the file, relative to the workspace.
        """

        async def work(lsp: Lsp) -> str:
            return (
                "\n".join(text.symbols(await lsp.ask("textDocument/documentSymbol", path))) or f"no symbols in {path}"
            )

        return await run(ctx, work)

    return [diagnostics, definition, references, hover, symbols]


async def _said(work: Awaitable[str], otherwise: str) -> str:
    return await work or otherwise
