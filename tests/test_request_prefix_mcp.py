"""The request prefix across an MCP server's ``tools/list_changed`` (issue 38): crab-mcp's tiny
test server (the official ``mcp`` SDK, over stdio) adds a tool mid-session; the tools array of
the requests changes exactly once, at the first request after the list changed, and every other
request keeps the previous one's tools, system prompt and messages."""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from pathlib import Path
from typing import Any

import crab
import pytest

crab_mcp = pytest.importorskip("crab_mcp")
TINY = Path(__file__).resolve().parents[1] / "plugins" / "mcp" / "tests" / "mcp_tiny_server.py"


def test_an_mcp_list_change_changes_the_tools_array_once(crab_agent: Any) -> None:
    h = crab_agent(
        [
            [{"tool": "tiny_grow", "args": {"name": "fresh"}}],
            [{"text": "grown"}],
            [{"tool": "tiny_fresh", "args": {}}],
            [{"text": "used it"}],
            [{"text": "still here"}],
        ],
        plugins={"mcp": crab_mcp},
        config={
            "plugins.mcp.servers": {"tiny": {"command": sys.executable, "args": [str(TINY)]}},
            "crab.permissions": "yolo",
            # The server's tools must be there from the first request, however loaded the machine:
            # start-up otherwise goes on without a server slower than a few seconds.
            "plugins.mcp.startup_wait": 120,
        },
    )
    h.run("grow a tool")
    deadline = time.monotonic() + 120
    while "tiny_fresh" not in h.agent.tools and time.monotonic() < deadline:
        h.run_async(asyncio.sleep(0.05))  # the relist runs in the server's task, after the notification
    assert "tiny_fresh" in h.agent.tools
    h.run("use it")
    h.run("and now?")
    requests = h.requests
    assert len(requests) == 5
    changed = [i for i in range(1, len(requests)) if requests[i].tools != requests[i - 1].tools]
    assert changed == [2]  # once: the first request after the list changed
    assert "tiny_fresh" in {t.name for t in requests[2].tools}
    for before, after in itertools.pairwise(requests):
        assert after.system == before.system
        assert after.messages[: len(before.messages)] == before.messages
    results = [m for m in h.session.messages if isinstance(m, crab.messages.ToolResultMessage)]
    assert not results[-1].is_error
