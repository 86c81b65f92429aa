"""Hostile MCP servers over stdio (the SDK's lowlevel ``Server``), one per mode:

- ``restless STARTS``: one subscribable resource; the server exits by itself a moment after every
  subscription, however often it is started again, and appends a line to the file STARTS each
  time it starts (how a test counts crab's restarts).
- ``album N``: one resource, ``hostile://album``, whose contents are N small PNG images.
- ``padded -``: any ``hostile://pad/N/TEXT`` reads as N ``x`` characters, then TEXT.
- ``chatty READS``: one subscribable resource; once subscribed, the server says it changed 500
  times as fast as it can, and appends a line to the file READS for every read of it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

STATE = "restless://state"
NEWS = "chatty://news"
UPDATES = 500
ALBUM = "hostile://album"
PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAD0lEQVR4nGNgaPgPQhAKACX2Bf2gcp/LAAAAAElFTkSuQmCC"


def build(mode: str, arg: str) -> Server:
    uri = {"restless": STATE, "album": ALBUM, "chatty": NEWS, "padded": "hostile://pad/0/"}[mode]

    async def tools(ctx: object, params: object) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    async def listed(ctx: object, params: object) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri=uri, name=mode)])

    async def templates(ctx: object, params: object) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[])

    async def read(ctx: object, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if mode == "padded":
            size, _, text = str(params.uri).removeprefix("hostile://pad/").partition("/")
            padded = types.TextResourceContents(uri=str(params.uri), text="x" * int(size) + text)
            return types.ReadResourceResult(contents=[padded])
        if mode == "chatty":
            with open(arg, "a") as reads:
                reads.write("read\n")
        if mode in ("restless", "chatty"):
            text = types.TextResourceContents(uri=uri, text="the state", mime_type="text/plain")
            return types.ReadResourceResult(contents=[text])
        images = [
            types.BlobResourceContents(uri=f"{uri}/{n}.png", blob=PIXEL_PNG, mime_type="image/png")
            for n in range(int(arg))
        ]
        return types.ReadResourceResult(contents=images)

    async def subscribe(ctx: object, params: object) -> types.EmptyResult:
        threading.Timer(0.2, os._exit, (0,)).start()  # "exited while idle", right after crab subscribed
        return types.EmptyResult()

    async def chatter(ctx: Any) -> None:
        for _ in range(UPDATES):
            await ctx.session.send_resource_updated(uri)

    async def subscribe_chatty(ctx: Any, params: object) -> types.EmptyResult:
        chatting.append(asyncio.get_running_loop().create_task(chatter(ctx)))
        return types.EmptyResult()

    chatting: list[asyncio.Task[None]] = []

    handlers: dict[str, object] = {}
    if mode == "restless":
        handlers["on_subscribe_resource"] = subscribe
    elif mode == "chatty":
        handlers["on_subscribe_resource"] = subscribe_chatty
    return Server(
        "hostile",
        on_list_tools=tools,
        on_list_resources=listed,
        on_list_resource_templates=templates,
        on_read_resource=read,
        **handlers,  # type: ignore[arg-type]
    )


async def _main(mode: str, arg: str) -> None:
    server = build(mode, arg)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    mode, arg = sys.argv[1], sys.argv[2]
    if mode == "restless":
        with open(arg, "a") as starts:
            starts.write(f"{os.getpid()}\n")
    anyio.run(_main, mode, arg)
