"""Resource subscriptions against @modelcontextprotocol/server-everything (npm, pinned in
tests/peers): a resource the model read is subscribed to; when the server says it changed, crab
reads it again, shows a notice, and the model finds the new content after its next tool result;
crab unsubscribes when it stops."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import crab
import crab_mcp
import pytest
from crab import ModelRequest, NoticeEvent, ToolContext, ToolResultMessage

pytestmark = pytest.mark.slow

URI = "demo://resource/dynamic/text/1"


class Settle:
    """A tool that waits (at most 30 s) until an update of a subscribed resource was read again:
    what the model does next then deterministically follows it."""

    @crab.hookimpl
    def crab_tools(self) -> list[Any]:
        @crab.tool
        async def settle(ctx: ToolContext) -> str:
            """Wait for a resource update."""
            manager = crab_mcp._running[id(ctx.config)]
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if manager.watch.pending.get(ctx.session_id) or manager.watch.delivered:
                    return "settled"
                await asyncio.sleep(0.05)
            return "no update within 30 s"

        return [settle]


def script(request: ModelRequest) -> list[dict[str, Any]]:
    done = sum(isinstance(m, ToolResultMessage) for m in request.messages)
    steps: list[dict[str, Any]] = [
        {"tool": "ev_toggle-subscriber-updates", "args": {}},  # updates every 5 s for what is subscribed
        {"tool": "mcp_read_resource", "args": {"server": "ev", "uri": URI}},
        {"tool": "settle", "args": {}},
    ]
    return [steps[done]] if done < len(steps) else [{"text": "done"}]


def test_a_read_resource_is_subscribed_refreshed_told_and_unsubscribed(crab_agent, crab_home, everything_js, unfence):
    h = crab_agent(
        script,
        plugins={"mcp": crab_mcp, "settle": Settle()},
        config={
            "plugins.mcp.servers": {"ev": {"command": "node", "args": [str(everything_js), "stdio"]}},
            "crab.permissions": "yolo",
        },
    )
    manager = crab_mcp._running[id(h.config)]
    link = manager.links["ev"]
    assert link.can_subscribe
    h.run("watch a resource")
    _toggled, read, settled = [m for m in h.session.messages if isinstance(m, ToolResultMessage)]
    assert not read.is_error and link.subscribed == {URI}
    assert settled.content.startswith("settled")
    told = [m.content for m in (read, settled) if "changed since you read it" in m.content]
    assert len(told) == 1  # after the first tool result that followed the update, once
    note = told[0].split(f"MCP resource {URI} of server 'ev' changed since you read it; crab read it again:\n", 1)[1]
    assert "Resource 1" in unfence(note)
    notices = [e.message for e in h.events_of(NoticeEvent)]
    assert f"MCP ev: resource {URI} changed; the model sees it after its next tool call" in notices
    h.run_async(manager.stop())
    log = (crab_home / "mcp" / "logs" / "ev.log").read_text()
    assert f"Received Subscribe Resource request for URI: {URI}" in log
    assert f"Received Unsubscribe Resource request: {URI}" in log
    assert not link.subscribed
