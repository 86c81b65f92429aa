"""The tiny server over streamable HTTP on 127.0.0.1: headers from env references, failures."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from crab import ToolContext
from crab_mcp.manager import Manager
from crab_mcp.server import ServerLink
from crab_mcp.settings import server_configs


def manager_for(servers: dict[str, dict[str, Any]], environ: dict[str, str]) -> Manager:
    return Manager([ServerLink(c, None, environ=environ) for c in server_configs({"servers": servers})])


def test_a_bearer_token_from_the_environment_reaches_the_server(tiny_http):
    url, token = tiny_http
    servers = {"web": {"url": url, "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}, "connect_timeout": 20}}

    async def go() -> None:
        manager = manager_for(servers, {"WEB_TOKEN": token})
        assert await manager.start() == {}
        try:
            tool = {t.name: t for t in manager.tools()}["web_add"]
            result = await tool.run({"a": 20, "b": 22}, ToolContext(session_id="s", workspace=Path.cwd()))
            assert result.content == "42" and not result.is_error
        finally:
            await manager.stop()

    asyncio.run(go())


def test_a_wrong_token_and_a_closed_port_fail_with_one_line_and_no_secret(tiny_http, port):
    url, _token = tiny_http
    servers = {
        "wrong": {"url": url, "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}, "connect_timeout": 20},
        "closed": {"url": f"http://127.0.0.1:{port}/mcp", "connect_timeout": 20},
    }

    async def go() -> dict[str, str]:
        manager = manager_for(servers, {"WEB_TOKEN": "not-the-token-123"})
        try:
            return await manager.start()
        finally:
            await manager.stop()

    failed = asyncio.run(go())
    assert set(failed) == {"wrong", "closed"}
    assert "ConnectError" in failed["closed"] or "connect" in failed["closed"].lower()
    assert all("\n" not in r and "not-the-token-123" not in r for r in failed.values())


def test_an_http_server_that_goes_away_is_an_error_result_and_is_reconnected_when_back(http_server, port, tiny):
    import sys

    args = [sys.executable, tiny.__file__, "--http", str(port)]
    servers = {"web": {"url": f"http://127.0.0.1:{port}/mcp", "connect_timeout": 20, "timeout": 20}}

    async def go() -> None:
        server = http_server(args, port)
        manager = manager_for(servers, {})
        assert await manager.start() == {}
        tool = {t.name: t for t in manager.tools()}["web_echo"]
        ctx = ToolContext(session_id="s", workspace=Path.cwd())
        try:
            assert (await tool.run({"text": "one"}, ctx)).content == "echo: one"
            server.stop()
            gone = await tool.run({"text": "two"}, ctx)
            assert gone.is_error and "MCP server 'web'" in gone.content
            assert manager.links["web"].status == "down"
            server = http_server(args, port)
            back = await tool.run({"text": "three"}, ctx)
            assert back.content == "echo: three" and manager.links["web"].status == "ready"
        finally:
            await manager.stop()
            server.stop()

    asyncio.run(go())


def test_crab_introduces_itself_over_http_too(tiny_http):
    import crab

    url, token = tiny_http

    async def go() -> str:
        manager = manager_for({"web": {"url": url, "headers": {"Authorization": f"Bearer {token}"}}}, {})
        assert await manager.start() == {}
        try:
            tool = {t.name: t for t in manager.tools()}["web_client_info"]
            return str((await tool.run({}, ToolContext(session_id="s", workspace=Path.cwd()))).content)
        finally:
            await manager.stop()

    assert asyncio.run(go()) == f"crab {crab.__version__}"
