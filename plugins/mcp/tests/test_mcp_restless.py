"""A hostile server that exits a moment after every subscription: crab starts it again a few
times (subscriptions survive a restart) and then gives up, instead of restarting it forever."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import crab_mcp
from crab import NoticeEvent

RESTLESS = Path(__file__).with_name("mcp_restless_server.py")


def test_a_server_that_keeps_exiting_is_not_restarted_forever(crab_agent, tmp_path):
    from crab_mcp.subscriptions import MAX_QUICK_RESTARTS

    starts = tmp_path / "starts"
    h = crab_agent(
        [[{"text": "seen"}]],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"rl": {"command": sys.executable, "args": [str(RESTLESS), str(starts)]}}},
    )
    manager = crab_mcp._running[id(h.config)]
    link = manager.links["rl"]
    assert h.run("look at @rl:restless://state").text == "seen"  # attached, so subscribed

    def given_up() -> bool:
        return any("gave up" in e.message for e in h.events_of(NoticeEvent))

    async def settled() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not given_up():
            await asyncio.sleep(0.05)

    h.run_async(settled())
    assert given_up(), f"still restarting after 120 s: {len(starts.read_text().split())} starts"
    count = len(starts.read_text().split())
    assert count == 1 + MAX_QUICK_RESTARTS
    h.run_async(asyncio.sleep(3))  # longer than the longest backoff between quick restarts
    assert len(starts.read_text().split()) == count and link.status != "ready"
    notice = next(e.message for e in h.events_of(NoticeEvent) if "gave up" in e.message)
    assert "'rl'" in notice and "\n" not in notice
