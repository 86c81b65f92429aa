"""The tiny server over streamable HTTP on 127.0.0.1: headers from env references, failures."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from crab import ToolContext
from crab.tools import run_tool
from crab_mcp.manager import Manager
from crab_mcp.server import ServerLink
from crab_mcp.settings import server_configs


def manager_for(servers: dict[str, dict[str, Any]], environ: dict[str, str]) -> Manager:
    return Manager([ServerLink(c, None, environ=environ) for c in server_configs({"servers": servers})])


def test_a_bearer_token_from_the_environment_reaches_the_server(tiny_http, unfence):
    url, token = tiny_http
    servers = {"web": {"url": url, "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}, "connect_timeout": 20}}

    async def go() -> None:
        manager = manager_for(servers, {"WEB_TOKEN": token})
        assert await manager.start() == {}
        try:
            tool = {t.name: t for t in manager.tools()}["web_add"]
            result = await run_tool(tool, {"a": 20, "b": 22}, ToolContext(session_id="s", workspace=Path.cwd()))
            assert unfence(result.content) == "42" and not result.is_error
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
    # The status and what to check, not the SDK's "error -32603: Server returned an error response".
    assert failed["wrong"] == (
        "the server answered HTTP 401 Unauthorized: check the Authorization header in "
        "[plugins.mcp.servers.wrong] and the value of ${WEB_TOKEN} in your environment"
    )


def test_a_401_without_headers_says_which_key_to_add(tiny_http):
    url, _token = tiny_http

    async def go() -> dict[str, str]:
        manager = manager_for({"bare": {"url": url, "connect_timeout": 20}}, {})
        try:
            return await manager.start()
        finally:
            await manager.stop()

    reason = asyncio.run(go())["bare"]
    assert reason.startswith("the server answered HTTP 401 Unauthorized: it wants a key; add headers = {")
    assert "[plugins.mcp.servers.bare]" in reason


@pytest.mark.parametrize("body", ["json", "events"])
def test_an_answer_over_max_message_is_an_error_result_and_the_sdks_log_goes_to_the_servers_log(
    body, http_server, port, tiny, tmp_path, capfd, root_records, unfence
):
    # JSON bodies (--json) and server-sent events (the default) are both bounded; the SDK logs
    # a cut JSON body with a traceback, which must land in the server's log, not the terminal.
    import sys

    args = [sys.executable, tiny.__file__, "--http", str(port), *(["--json"] if body == "json" else [])]
    table = {"url": f"http://127.0.0.1:{port}/mcp", "connect_timeout": 20, "timeout": 20}
    configs = server_configs({"servers": {"web": table}, "max_message": 100_000})

    async def go() -> None:
        server = http_server(args, port)
        manager = Manager([ServerLink(c, tmp_path / "logs") for c in configs])
        try:
            assert await manager.start() == {}
            tools = {t.name: t for t in manager.tools()}
            ctx = ToolContext(session_id="s", workspace=Path.cwd())
            big = await run_tool(tools["web_big"], {"size": 300_000}, ctx)
            assert big.is_error and "sent a message over 100,000 bytes" in big.content, big.content
            assert manager.links["web"].status == "down"
            small = await run_tool(tools["web_big"], {"size": 5}, ctx)
            assert (unfence(small.content), small.is_error) == ("xxxxx", False)
        finally:
            await manager.stop()
            server.stop()

    asyncio.run(go())
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "Error parsing" not in out + err, err[-2000:]
    assert [r.getMessage() for r in root_records if r.name.startswith("mcp")] == []
    if body == "json":
        assert "[mcp sdk error] Error parsing JSON response" in (tmp_path / "logs" / "web.log").read_text()


def test_crab_introduces_itself_over_http_too(tiny_http, unfence):
    import crab

    url, token = tiny_http

    async def go() -> str:
        manager = manager_for({"web": {"url": url, "headers": {"Authorization": f"Bearer {token}"}}}, {})
        assert await manager.start() == {}
        try:
            tool = {t.name: t for t in manager.tools()}["web_client_info"]
            return str((await run_tool(tool, {}, ToolContext(session_id="s", workspace=Path.cwd()))).content)
        finally:
            await manager.stop()

    assert unfence(asyncio.run(go())) == f"crab {crab.__version__}"


def test_an_http_server_that_goes_away_is_an_error_result_and_is_reconnected_when_back(
    http_server, port, tiny, unfence
):
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
            assert unfence((await run_tool(tool, {"text": "one"}, ctx)).content) == "echo: one"
            server.stop()
            gone = await run_tool(tool, {"text": "two"}, ctx)
            assert gone.is_error and "MCP server 'web'" in gone.content
            assert manager.links["web"].status == "down"
            server = http_server(args, port)
            back = await run_tool(tool, {"text": "three"}, ctx)
            assert unfence(back.content) == "echo: three" and manager.links["web"].status == "ready"
        finally:
            await manager.stop()
            server.stop()

    asyncio.run(go())
