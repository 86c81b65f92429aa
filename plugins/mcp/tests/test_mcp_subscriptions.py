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
from crab import ModelRequest, ToolContext
from crab.events import NoticeEvent
from crab.messages import ToolResultMessage

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


class Changed:
    """A tool that waits (at most 30 s) until the server said a subscribed resource changed and
    crab read it again: proof the subscription is live on the connection it runs on."""

    @crab.hookimpl
    def crab_tools(self) -> list[Any]:
        @crab.tool
        async def changed(ctx: ToolContext) -> str:
            """Wait for a resource update."""
            watch = crab_mcp._running[id(ctx.config)].watch
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if any("changed since you read it" in note for note in watch.pending.get(ctx.session_id, {}).values()):
                    return "changed"
                await asyncio.sleep(0.05)
            return "no update within 30 s"

        return [changed]


def after_restart(request: ModelRequest) -> list[dict[str, Any]]:
    """Turn 1 reads the resource; turn 2 (after the kill) turns updates on and waits for one."""
    prompts = [i for i, m in enumerate(request.messages) if type(m).__name__ == "UserMessage"]
    since = request.messages[prompts[-1] + 1 :]
    done = sum(isinstance(m, ToolResultMessage) for m in since)
    if request.messages[prompts[-1]].content == "watch a resource":
        steps: list[dict[str, Any]] = [{"tool": "mcp_read_resource", "args": {"server": "ev", "uri": URI}}]
    else:
        steps = [{"tool": "ev_toggle-subscriber-updates", "args": {}}, {"tool": "changed", "args": {}}]
    return [steps[done]] if done < len(steps) else [{"text": "done"}]


def test_subscriptions_survive_a_server_restart(crab_agent, crab_home, everything_js, unfence):
    import os
    import signal

    h = crab_agent(
        after_restart,
        plugins={"mcp": crab_mcp, "changed": Changed()},
        config={
            "plugins.mcp.servers": {"ev": {"command": "node", "args": [str(everything_js), "stdio"]}},
            "crab.permissions": "yolo",
        },
    )
    manager = crab_mcp._running[id(h.config)]
    link = manager.links["ev"]
    assert h.run("watch a resource").text == "done"
    assert link.subscribed == {URI}
    first = link._stdio
    assert first is not None and first._process is not None
    os.kill(first._process.pid, signal.SIGKILL)  # a crash while idle

    async def restarted() -> None:  # crab notices, starts it again and subscribes again by itself
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if link._stdio is not first and URI in link.subscribed and manager.watch.pending.get(h.session.id):
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"not restarted and subscribed again within 60 s: {link.status} {link.reason}")

    h.run_async(restarted())
    notices = [e.message for e in h.events_of(NoticeEvent)]
    assert f"MCP ev: started again; resource {URI} read again; the model sees it after its next tool call" in notices
    assert h.run("now watch it change").text == "done"
    toggled, waited = [m for m in h.session.messages if isinstance(m, ToolResultMessage)][-2:]
    fresh = (
        f"MCP server 'ev' started again since you read its resource {URI} (it may have changed); crab read it again:\n"
    )
    assert fresh in toggled.content and "Resource 1" in unfence(toggled.content.split(fresh, 1)[1])
    assert waited.content.startswith("changed")  # the new process sent an update for the URI
    assert f"MCP resource {URI} of server 'ev' changed since you read it" in waited.content
    log = (crab_home / "mcp" / "logs" / "ev.log").read_text()
    assert log.count(f"Received Subscribe Resource request for URI: {URI}") == 2  # once per process
