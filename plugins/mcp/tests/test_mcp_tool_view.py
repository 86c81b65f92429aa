"""MCP tools (added at start-up through ``AgentHandle.add_tools``) in core's progressive tool view:
constant stubs with their parameters' names and types, the same on every request, like any
``crab_tools`` tool; a call is checked by the server's own schema."""

from __future__ import annotations

from typing import Any

import crab_mcp
from crab.messages import ToolResultMessage


def specs(request: Any) -> dict[str, dict[str, Any]]:
    return {t.name: t.parameters for t in request.tools}


def test_mcp_tools_are_constant_stubs_that_can_be_called_directly(crab_agent, tiny_cmd):
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
    # Naming a tool costs no model call: the reply ends the turn (was: one more step, expanded).
    assert h.run("add").text == "I will use $tiny_add."
    first = specs(h.requests[0])
    assert set(first["tiny_add"]["properties"]) == {"a", "b"}  # names and types, no descriptions
    assert all("description" not in p for p in first["tiny_add"]["properties"].values())
    assert h.run("add now").text == "3"
    added = [m for m in h.session.messages if isinstance(m, ToolResultMessage)][-1]
    assert not added.is_error and "3" in added.content
    h.run("echo")
    echo = [m for m in h.session.messages if isinstance(m, ToolResultMessage)][-1]
    assert echo.is_error  # the server's own schema checked the call made against a stub
    assert all(r.tools == h.requests[0].tools for r in h.requests)  # never expanded, never changed
