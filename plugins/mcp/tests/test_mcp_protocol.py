"""The rest of MCP, client side, against the tests' own server (stdio and in-process) and
server-everything: tool lists that change mid-run, progress, logging, roots, resources,
prompts, sampling and elicitation."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import crab_mcp
from crab import NoticeEvent, ToolContext, ToolResultMessage
from crab_mcp.manager import Manager
from crab_mcp.server import ServerLink
from crab_mcp.settings import ServerConfig


def results(h: Any) -> list[ToolResultMessage]:
    return [m for m in h.session.messages if isinstance(m, ToolResultMessage)]


def in_process(server: Any, **options: Any) -> ServerLink:
    config = ServerConfig(options.pop("name", "tiny"), command="in-process", **options)

    def connector(stack: AsyncExitStack) -> Any:
        return server

    return ServerLink(config, None, connector=connector)


async def started(*links: ServerLink) -> Manager:
    manager = Manager(list(links))
    assert await manager.start() == {}
    return manager


def tool_of(manager: Manager, name: str) -> Any:
    return {t.name: t for t in manager.tools()}[name]


# --- tools/list_changed --------------------------------------------------------------------


def test_a_tool_added_mid_run_is_callable_in_the_same_chat(crab_agent, tiny_cmd):
    h = crab_agent(
        [
            [{"tool": "tiny_grow", "args": {"name": "fresh"}}],
            [{"text": "grown"}],
            [{"tool": "tiny_fresh", "args": {}}],
            [{"text": "used it"}],
        ],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"tiny": tiny_cmd()}, "crab.permissions": "yolo"},
    )
    assert "tiny_fresh" not in h.agent.tools
    h.run("grow a tool")
    for _ in range(100):  # the relist runs in the server's task, after the notification
        if "tiny_fresh" in h.agent.tools:
            break
        h.run_async(asyncio.sleep(0.05))
    assert h.agent.tools["tiny_fresh"].plugin == "mcp"
    h.run("use it")
    grew, used = results(h)
    assert grew.content == "added fresh"
    assert not used.is_error and used.content == "grown: fresh"


def test_a_tool_the_server_dropped_says_so(tiny):
    async def go() -> None:
        link = in_process(tiny.build())
        manager = await started(link)
        try:
            echo = tool_of(manager, "tiny_echo")
            link.tools = [t for t in link.tools if t.name != "echo"]
            out = await echo.run({"text": "x"}, ToolContext(session_id="s", workspace=Path.cwd()))
            assert out.is_error and "no longer offers 'echo'" in out.content
        finally:
            await manager.stop()

    asyncio.run(go())


# --- progress --------------------------------------------------------------------------------


def test_every_call_carries_a_progress_token_and_progress_becomes_notices(tiny, tmp_path):
    async def go() -> None:
        manager = await started(in_process(tiny.build()))
        try:
            seen: list[Any] = []
            ctx = ToolContext(session_id="s", workspace=tmp_path, emit=seen.append)
            out = await tool_of(manager, "tiny_progress_token").run({}, ctx)
            assert out.content == "token"
            lines = [e.message for e in seen if isinstance(e, NoticeEvent)]
            assert lines[-1] == "MCP tiny:progress_token: 2/2 (100%) done"
            assert lines[0] == "MCP tiny:progress_token: 1/2 (50%) halfway"
        finally:
            await manager.stop()

    asyncio.run(go())
