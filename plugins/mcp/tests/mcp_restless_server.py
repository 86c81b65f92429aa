"""A hostile MCP server over stdio: it offers one subscribable resource and exits by itself a
moment after every subscription, however often it is started again.

``python mcp_restless_server.py STARTS`` appends a line to the file STARTS each time it starts
(how a test counts crab's restarts).
"""

from __future__ import annotations

import os
import sys
import threading

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

URI = "restless://state"


async def _list(ctx: object, params: object) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[types.Resource(uri=URI, name="state", mime_type="text/plain")])


async def _tools(ctx: object, params: object) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[])


async def _templates(ctx: object, params: object) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[])


async def _read(ctx: object, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    text = types.TextResourceContents(uri=URI, text="the state", mime_type="text/plain")
    return types.ReadResourceResult(contents=[text])


async def _subscribe(ctx: object, params: object) -> types.EmptyResult:
    threading.Timer(0.2, os._exit, (0,)).start()  # "exited while idle", right after crab subscribed
    return types.EmptyResult()


async def _main() -> None:
    server = Server(
        "restless",
        on_list_tools=_tools,
        on_list_resources=_list,
        on_list_resource_templates=_templates,
        on_read_resource=_read,
        on_subscribe_resource=_subscribe,
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    with open(sys.argv[1], "a") as starts:
        starts.write(f"{os.getpid()}\n")
    anyio.run(_main)
