"""The MCP features beyond tools/call against @modelcontextprotocol/server-everything (npm,
pinned in tests/peers), the reference server that exercises all of them: the tool list it changes
once it knows crab's capabilities, progress, logging, roots, resources and templates, prompts,
sampling (refused) and URL-mode elicitation, over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from crab import ToolContext
from crab.events import NoticeEvent
from crab.tools import run_tool
from crab_mcp.manager import Manager
from crab_mcp.server import ServerLink
from crab_mcp.settings import server_configs

pytestmark = pytest.mark.slow


async def until(check: Any, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)


def drive(tmp_path: Path, table: dict[str, Any], check: Any) -> str:
    (config,) = server_configs({"servers": {"ev": table}})
    link = ServerLink(config, tmp_path / "logs")
    link.workspace = tmp_path

    async def go() -> None:
        manager = Manager([link])
        added: list[Any] = []
        manager.attach(added.extend)
        assert await manager.start() == {}
        try:
            await check(manager, link, added)
        finally:
            await manager.stop()

    asyncio.run(go())
    return (tmp_path / "logs" / "ev.log").read_text()


def test_server_everything_speaks_the_whole_protocol_over_stdio(tmp_path, everything_js):
    asked: list[Any] = []

    async def ask(request: Any) -> str:
        asked.append(request)
        return "once"

    async def check(manager: Manager, link: ServerLink, added: list[Any]) -> None:
        def tools() -> dict[str, Any]:
            return {t.name: t for t in manager.tools()}

        # Tools it registers once it has seen crab's capabilities: listed at start or sent as
        # tools/list_changed, either way in the registry.
        await until(lambda: "ev_get-roots-list" in tools())
        assert {"ev_get-roots-list", "ev_trigger-sampling-request", "ev_trigger-url-elicitation"} <= set(tools())
        seen: list[Any] = []
        ctx = ToolContext(session_id="s", workspace=tmp_path, emit=seen.append, ask=ask)

        roots = await run_tool(tools()["ev_get-roots-list"], {}, ctx)
        assert tmp_path.resolve().as_uri() in roots.content

        long = await run_tool(tools()["ev_trigger-long-running-operation"], {"duration": 1, "steps": 2}, ctx)
        assert not long.is_error
        progress = [e.message for e in seen if isinstance(e, NoticeEvent)]
        assert progress and progress[-1].startswith("MCP ev:trigger-long-running-operation: 2/2 (100%)")

        sampled = await run_tool(tools()["ev_trigger-sampling-request"], {"prompt": "hi"}, ctx)
        assert "crab refused the sampling request" in sampled.content

        url = "https://example.invalid/authorize"
        visited = await run_tool(tools()["ev_trigger-url-elicitation"], {"url": url}, ctx)
        assert "User completed the URL elicitation flow" in visited.content
        assert url in asked[-1].summary and "crab does not open it" in asked[-1].summary

        box = {t.name: t for t in added}  # registered as the server became ready
        listed = await run_tool(box["mcp_resources"], {}, ctx)
        assert (
            "demo://resource/static/document/" in listed.content
            and "template demo://resource/dynamic" in listed.content
        )
        text = await run_tool(box["mcp_read_resource"], {"server": "ev", "uri": "demo://resource/dynamic/text/1"}, ctx)
        assert not text.is_error and "1" in text.content
        blob = await run_tool(box["mcp_read_resource"], {"server": "ev", "uri": "demo://resource/dynamic/blob/1"}, ctx)
        assert "not shown" in blob.content

        assert {"simple-prompt", "args-prompt"} <= {p.name for p in link.prompts}
        prompt = await link.request("prompts/get", "get_prompt", "args-prompt", {"city": "Oslo"})
        assert "Oslo" in prompt.messages[0].content.text

        await run_tool(tools()["ev_toggle-simulated-logging"], {}, ctx)
        await until(lambda: "[server log" in (tmp_path / "logs" / "ev.log").read_text())

    log = drive(tmp_path, {"command": "node", "args": [str(everything_js), "stdio"]}, check)
    assert "[server log" in log
    assert "refused a sampling request" in log


def test_server_everything_list_changed_progress_and_resources_over_http(tmp_path, everything_js, http_server, port):
    server = http_server(["node", str(everything_js), "streamableHttp"], port, env={**os.environ, "PORT": str(port)})

    async def check(manager: Manager, link: ServerLink, added: list[Any]) -> None:
        def tools() -> dict[str, Any]:
            return {t.name: t for t in manager.tools()}

        await until(lambda: "ev_get-roots-list" in tools())
        seen: list[Any] = []
        ctx = ToolContext(session_id="s", workspace=tmp_path, emit=seen.append)
        # gzip-file-as-resource adds a session resource: resources/list_changed, then a relist.
        data = "data:text/plain;base64,aGVsbG8="
        made = await run_tool(tools()["ev_gzip-file-as-resource"], {"name": "hello.gz", "data": data}, ctx)
        assert "hello.gz" in made.content
        await until(lambda: any("hello.gz" in r.uri for r in link.resources))
        assert any("hello.gz" in r.uri for r in link.resources)
        await run_tool(tools()["ev_trigger-long-running-operation"], {"duration": 1, "steps": 2}, ctx)
        assert any(isinstance(e, NoticeEvent) and "2/2" in e.message for e in seen)

    try:
        drive(tmp_path, {"url": f"http://127.0.0.1:{port}/mcp"}, check)
    finally:
        server.stop()


def test_server_everything_over_the_legacy_sse_transport(tmp_path, everything_js, http_server, port, unfence):
    server = http_server(["node", str(everything_js), "sse"], port, env={**os.environ, "PORT": str(port)})

    async def check(manager: Manager, link: ServerLink, added: list[Any]) -> None:
        echo = {t.name: t for t in manager.tools()}["ev_echo"]
        out = await run_tool(echo, {"message": "over sse"}, ToolContext(session_id="s", workspace=tmp_path))
        assert unfence(out.content) == "Echo: over sse"
        assert link.config.transport == "sse"

    try:
        drive(tmp_path, {"url": f"http://127.0.0.1:{port}/sse", "transport": "sse"}, check)
    finally:
        server.stop()
