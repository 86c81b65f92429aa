"""The editor's MCP servers, started by crab-mcp: runs where crab-mcp is installed (the
repository's full test run), skips alone with core (crab-acp never imports crab-mcp)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import McpServerStdio

SERVER = Path(__file__).parent / "acp_mcp_echo_server.py"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("crab_mcp") is None or importlib.util.find_spec("mcp") is None,
    reason="crab-mcp is not installed (pip install -e plugins/mcp)",
)


def test_acp_editor_mcp_server_tools_run_through_crab_mcp(crab_acp: Any, editor: Any) -> None:
    crab_acp.env["CRAB_PLUGINS"] += ",mcp"
    # The user's own limits: a loaded test machine may need more than crab-mcp's 20 s to start
    # Python, and more than its 5 s start-up wait (the tool must be there for the first request).
    (crab_acp.crab_home / "config.toml").write_text("[plugins.mcp]\nconnect_timeout = 120\nstartup_wait = 120\n")
    model = crab_acp.script([{"tool": "editor_echo_shout", "args": {"text": "hi"}, "id": "m1"}], [{"text": "done"}])
    editor.answers = ["once"]  # an MCP tool is network-class unless configured otherwise: asked

    async def go() -> None:
        async with crab_acp.connect(model, editor) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=crab_acp.capabilities())
            server = McpServerStdio(name="editor echo", command=sys.executable, args=[str(SERVER)], env=[])
            broken = McpServerStdio(name="broken", command=str(crab_acp.root / "no-such-server"), args=[], env=[])
            new = await conn.new_session(cwd=str(crab_acp.work), mcp_servers=[server, broken])
            await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("shout hi")])

    crab_acp.run(go())
    ended = {u.tool_call_id: u for u in editor.of("tool_call_update") if u.status in ("completed", "failed")}
    assert ended["m1"].status == "completed", editor.text()
    assert "HI!" in ended["m1"].content[-1].content.text
    assert "not installed or not enabled" not in editor.text()
    # A server that cannot start is a warning the editor sees (it came before any turn).
    assert "MCP server 'broken' failed to start" in editor.text()
