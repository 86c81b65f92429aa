"""MCP tools (added at start-up through ``AgentHandle.add_tools``) in core's progressive tool view:
stubs until hinted at or called, then their full schema, like any ``crab_tools`` tool."""

from __future__ import annotations

from typing import Any

import crab_mcp
from crab import ToolResultMessage


def specs(request: Any) -> dict[str, dict[str, Any]]:
    return {t.name: t.parameters for t in request.tools}


def test_mcp_tools_are_stubs_until_hinted_or_called(crab_agent, tiny_cmd):
    h = crab_agent(
        [
            [{"text": "I will use $tiny_add."}],
            [{"tool": "tiny_add", "args": {"a": 1, "b": 2}}],
            [{"text": "3"}],
            [{"tool": "tiny_echo", "args": {"wrong": 1}}],
            [{"text": "done"}],
        ],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"tiny": tiny_cmd()}, "crab.permissions": "yolo"},
    )
    assert h.run("add").text == "3"
    first, hinted, _ = (specs(r) for r in h.requests[:3])
    assert first["tiny_add"] == {"type": "object"} and first["tiny_echo"] == {"type": "object"}
    assert "properties" in hinted["tiny_add"] and hinted["tiny_echo"] == {"type": "object"}
    h.run("echo")
    echo = [m for m in h.session.messages if isinstance(m, ToolResultMessage)][-1]
    assert echo.is_error  # the server's own schema checked the call made against a stub
    assert "properties" in specs(h.requests[-1])["tiny_echo"]  # expanded once called
