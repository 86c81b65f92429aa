"""Servers' resources as two crab tools the model can call: ``mcp_resources`` and ``mcp_read_resource``.

``mcp_resources`` lists what every ready server offers (or one server's), ``mcp_read_resource``
reads one URI (binary content as a note with its type and size) and subscribes to it where the
server offers that (``crab_mcp.subscriptions``); what a server wrote is masked, then fenced as
its content (``crab_mcp.fence``). Both are tools like any other (permission gate,
timeout, output limit) and join the registry once a server that offers resources is ready.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crab import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from crab_mcp.manager import Manager
    from crab_mcp.server import ServerLink

LIST = "mcp_resources"
READ = "mcp_read_resource"


def offers(link: ServerLink) -> bool:
    return bool(link.resources or link.templates)


def resource_tools(manager: Manager) -> list[Tool]:
    """The two tools, with the permission class the servers that offer resources allow."""
    links = [link for link in manager.links.values() if offers(link)]
    permission = "read" if links and all(link.config.permission == "read" for link in links) else "network"
    timeout = max((link.config.connect_timeout + link.config.timeout + 5.0 for link in links), default=90.0)

    async def list_handler(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return listing(manager, arguments.get("server"))

    async def read_handler(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await read(manager, str(arguments.get("server") or ""), str(arguments.get("uri") or ""), ctx)

    server = {"type": "string", "description": "the MCP server's name (see mcp_resources)"}
    return [
        Tool(
            name=LIST,
            description="List the resources (and URI templates) MCP servers offer to read with mcp_read_resource.",
            parameters={"type": "object", "properties": {"server": server}},
            handler=list_handler,
            permission=permission,  # type: ignore[arg-type]
            timeout=timeout,
        ),
        Tool(
            name=READ,
            description="Read one resource of an MCP server by its URI (from mcp_resources or a resource link).",
            parameters={
                "type": "object",
                "properties": {"server": server, "uri": {"type": "string", "description": "the resource's URI"}},
                "required": ["server", "uri"],
            },
            handler=read_handler,
            permission=permission,  # type: ignore[arg-type]
            timeout=timeout,
        ),
    ]


def _first(text: str | None) -> str:
    return (text or "").strip().split("\n", 1)[0][:160]


def listing(manager: Manager, only: str | None = None) -> ToolResult:
    links = [link for link in manager.links.values() if offers(link) and (not only or link.name == only)]
    if not links:
        names = ", ".join(sorted(link.name for link in manager.links.values() if offers(link))) or "none"
        return ToolResult(f"no MCP server {only!r} offers resources (servers with resources: {names})", True)
    from crab_mcp.fence import fence
    from crab_mcp.manager import mask

    blocks: list[str] = []
    for link in links:
        lines: list[str] = []
        for r in link.resources:
            mime = f" ({r.mime_type})" if r.mime_type else ""
            about = f" — {_first(r.description)}" if r.description else ""
            lines.append(f"  {r.uri}  {r.name}{mime}{about}")
        for t in link.templates:
            about = f" — {_first(t.description)}" if t.description else ""
            lines.append(f"  template {t.uri_template}  {t.name}{about}")
        masked = mask(link, ToolResult("\n".join(lines))).content
        blocks.append(f"server {link.name}:\n{fence(link.name, LIST, masked)}")
    return ToolResult("\n".join(blocks))


async def read(manager: Manager, server: str, uri: str, ctx: ToolContext | None = None) -> ToolResult:
    """One resource, fenced; read for ``ctx``'s session it is also subscribed to, where the server
    offers that (``crab_mcp.subscriptions``)."""
    from crab_mcp.manager import mask
    from crab_mcp.server import CallFailed, ServerDown

    link = manager.links.get(server)
    if link is None or not offers(link):
        names = ", ".join(sorted(n for n, lk in manager.links.items() if offers(lk))) or "none"
        return ToolResult(f"no MCP server {server!r} offers resources (servers with resources: {names})", True)
    if not uri:
        return ToolResult("give the resource's uri (mcp_resources lists them)", True)
    where = f"MCP server {link.name!r}"
    try:
        result = await link.request(f"resources/read {uri}", "read_resource", uri)
    except ServerDown as exc:
        return ToolResult(f"{where} is not available: {exc}", is_error=True)
    except CallFailed as exc:
        return ToolResult(f"{where} {exc}", is_error=True)
    parts: list[str] = []
    for item in result.contents:
        text = getattr(item, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            size = len(getattr(item, "blob", "") or "") * 3 // 4
            parts.append(f"[resource {item.uri} ({item.mime_type or 'binary'}), about {size} bytes, not shown]")
    await manager.watch.after_read(link, uri, ctx)
    from crab_mcp.fence import fenced

    return fenced(link.name, READ, mask(link, ToolResult("\n".join(parts) or "(empty resource)")))
