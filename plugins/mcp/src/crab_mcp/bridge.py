"""``crab mcp serve``: crab's loaded tools as an MCP server over stdio (or streamable HTTP:
``crab_mcp.serve_http``).

The tools come from ``crab.open_toolbox``: every enabled plugin's ``crab_tools``, with their
schemas, run the way the loop runs them (argument check, interception hooks, the permission
gate, timeouts, each tool's own workspace checks). No agent starts, so no ``crab_startup`` runs
and the configured MCP servers are not started: a config that points crab at ``crab mcp serve``
cannot loop. Nobody can be asked for permission, so ``[plugins.mcp] serve_permissions`` (the
user's own config; an untrusted project cannot set it) is the answer: read passes, a write,
exec or network call outside it is refused with an error result. Everything but the protocol
goes to stderr. ``listChanged`` is declared false, which is the truth: the tool box is fixed
for the life of the server.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crab import ToolBox
    from mcp import types

PLUGIN = "mcp"
SERVER_NAME = "crab"


def mcp_tool(tool: Any) -> types.Tool:
    """The MCP description of one crab tool (read-only hint for read tools)."""
    from mcp import types

    read = tool.permission == "read"
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=dict(tool.parameters) or {"type": "object", "properties": {}},
        annotations=types.ToolAnnotations(read_only_hint=read, destructive_hint=tool.permission in ("write", "exec")),
    )


def build_server(box: ToolBox) -> Any:
    """A lowlevel MCP ``Server`` whose tools are ``box``'s."""
    from mcp import types
    from mcp.server.lowlevel import Server

    from crab_mcp._version import version

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(t) for t in box.tools.values()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await box.call(params.name, params.arguments or {})
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.content)], is_error=result.is_error
        )

    return Server(SERVER_NAME, version=version(), on_list_tools=list_tools, on_call_tool=call_tool)


def serve(plugins: str | None = None, http_port: int | None = None) -> int:
    """Serve until the client closes stdin (or, with ``http_port``, until Ctrl-C); 0 then, 2 (one
    line on stderr) for a bad config."""
    import anyio
    from crab import CrabError, open_toolbox

    from crab_mcp.cli import resolved

    try:
        box = open_toolbox(plugins, allow=())
        settings = resolved(box.config).plugin_settings(PLUGIN)
    except CrabError as exc:
        print(f"crab: {exc}", file=sys.stderr)
        return exc.exit_code
    box.allow = frozenset(settings.get("serve_permissions") or ["read"])
    box.hint = (
        "The user can allow it in their own config: [plugins.mcp] serve_permissions = "
        '["read", "write", "exec", "network"] (only the classes they want).'
    )
    for line in box.failures:
        print(f"warning: {line}", file=sys.stderr)
    for line in box.config.notices():
        print(f"warning: {line}", file=sys.stderr)
    server = build_server(box)
    if http_port is not None:
        from crab_mcp.serve_http import load_token, serve_http

        try:
            serve_http(server, http_port, load_token())
        except KeyboardInterrupt:
            return 130
        return 0

    async def main() -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        return 130
    return 0
