"""``crab mcp serve`` with crab-tools-basic, driven by the MCP SDK's own client over stdio: the
real read and grep tools with their schemas and workspace seatbelt, and refused write and bash
(the user's config does not allow them). Needs every package installed (the repo-level suite)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("crab_mcp")
pytest.importorskip("crab_tools_basic")


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def test_crab_mcp_serve_offers_tools_basic_to_an_mcp_client(tmp_path: Path):
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    (ws / "notes.txt").write_text("alpha\nneedle in a haystack\n")
    (tmp_path / "outside.txt").write_text("private")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env["CRAB_HOME"] = str(home)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "crab", "mcp", "serve", "--plugins", "tools-basic"], env=env, cwd=str(ws)
    )

    async def go() -> None:
        with open(tmp_path / "serve-stderr.log", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=60) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert {"read", "grep", "write", "bash"} <= set(tools)
                assert "path" in tools["read"].input_schema["properties"]
                read = await client.call_tool("read", {"path": "notes.txt"})
                assert not read.is_error and "needle in a haystack" in text(read)
                grep = await client.call_tool("grep", {"pattern": "needle"})
                assert not grep.is_error and "notes.txt" in text(grep)
                outside = await client.call_tool("read", {"path": "../outside.txt"})
                assert outside.is_error and "private" not in text(outside)
                write = await client.call_tool("write", {"path": "new.txt", "content": "x"})
                assert write.is_error and "needs write permission" in text(write)
                bash = await client.call_tool("bash", {"command": "touch pwned"})
                assert bash.is_error and "needs exec permission" in text(bash)

    asyncio.run(go())
    assert not (ws / "new.txt").exists() and not (ws / "pwned").exists()
