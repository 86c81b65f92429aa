"""``crab mcp serve``: crab's loaded tools as an MCP server over stdio (or streamable HTTP:
``crab_mcp.serve_http``).

The tools come from ``crab.tools.open_toolbox``: every enabled plugin's ``crab_tools``, with their
schemas, run the way the loop runs them (argument check, interception hooks, the permission
gate, timeouts, each tool's own workspace checks). No agent starts, so no ``crab_startup`` runs
and the configured MCP servers are not started: a config that points crab at ``crab mcp serve``
cannot loop. Nobody can be asked for permission, so ``[plugins.mcp] serve_permissions`` (the
user's own config; an untrusted project cannot set it) is the answer: read passes, a write,
exec or network call outside it is refused with an error result. Everything but the protocol
goes to stderr. ``listChanged`` is declared false for tools, resources and prompts, which is
the truth: the tool box and the prompts are fixed for the life of the server, and crab sends no
notification when a workspace file appears (a client lists the resources again when it wants).
A call with a progress token gets a heartbeat (``crab_mcp.serve_progress``); a call the client
cancels (``notifications/cancelled``) is stopped, its processes ended (``crab_mcp.serve_cancel``); the workspace's
files are resources read through the box's own read tool (``crab_mcp.serve_resources``); what
plugins offer through ``crab_prompts`` (crab-skills: its skills) are prompts
(``crab_mcp.serve_prompts``). Tool results, resource text and prompt text pass through crab's
``Redactor`` (the secrets the CLI masks), so a key in a workspace file never leaves unmasked.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from crab.tools import ToolBox
    from mcp import types

    from crab_mcp.serve_prompts import ServedPrompt

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


def build_server(box: ToolBox, prompts: Mapping[str, ServedPrompt] | None = None) -> Any:
    """A lowlevel MCP ``Server`` whose tools are ``box``'s, with the workspace's files as
    resources when the box can read them (``crab_mcp.serve_resources``) and ``prompts`` as
    prompts when there are any (``crab_mcp.serve_prompts``)."""
    from crab.secrets import Redactor, known_secrets
    from mcp import MCPError, types
    from mcp.server.lowlevel import Server

    from crab_mcp import serve_prompts, serve_resources
    from crab_mcp._version import version
    from crab_mcp.serve_cancel import stoppable
    from crab_mcp.serve_progress import with_heartbeat

    redact = Redactor(known_secrets(box.config)).text

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(t) for t in box.tools.values()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # In a task of its own, so the client's notifications/cancelled stops the tool cleanly.
        work = with_heartbeat(box.call(params.name, params.arguments or {}), ctx, params.name)
        result = await stoppable(work)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=redact(result.content))], is_error=result.is_error
        )

    handlers: dict[str, Any] = {"on_list_tools": list_tools, "on_call_tool": call_tool}
    if serve_resources.offered(box):

        async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
            return types.ListResourcesResult(resources=await serve_resources.list_files(box))

        async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
            try:
                result: types.ReadResourceResult = await serve_resources.read_file(box, str(params.uri), redact)
            except MCPError as exc:  # the read tool's reason may quote what it read
                raise MCPError(exc.error.code, redact(exc.error.message)) from None
            for item in result.contents:
                item.text = redact(item.text)  # type: ignore[union-attr]
            return result

        async def list_templates(
            ctx: Any, params: types.PaginatedRequestParams | None
        ) -> types.ListResourceTemplatesResult:
            return types.ListResourceTemplatesResult(resource_templates=[])  # files have plain URIs

        handlers.update(
            on_list_resources=list_resources, on_read_resource=read_resource, on_list_resource_templates=list_templates
        )
    if prompts:
        offered = dict(prompts)

        async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
            return types.ListPromptsResult(prompts=[serve_prompts.mcp_prompt(p) for p in offered.values()])

        async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
            result: types.GetPromptResult = serve_prompts.get(offered, params.name, params.arguments)
            for message in result.messages:
                message.content.text = redact(message.content.text)  # type: ignore[union-attr]
            return result

        handlers.update(on_list_prompts=list_prompts, on_get_prompt=get_prompt)
    return Server(SERVER_NAME, version=version(), **handlers)


def serve(plugins: str | None = None, http_port: int | None = None) -> int:
    """Serve until the client closes stdin (or, with ``http_port``, until Ctrl-C); 0 then, 2 (one
    line on stderr) for a bad config."""
    import anyio
    from crab import CrabError
    from crab.tools import open_toolbox

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
    from crab_mcp.serve_prompts import collect

    server = build_server(box, collect(plugins))
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
