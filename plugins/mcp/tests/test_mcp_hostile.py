"""Hostile servers (``mcp_hostile_server.py``): one that exits a moment after every subscription
is started again a few times (subscriptions survive a restart) and then left down, instead of
restarted forever; a resource of a hundred images attaches only ``MAX_IMAGES`` of them."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import crab_mcp
from crab.events import NoticeEvent
from crab.messages import UserMessage

HOSTILE = Path(__file__).with_name("mcp_hostile_server.py")


def server(*args: str) -> dict[str, object]:
    """The ``[plugins.mcp.servers.X]`` table of one hostile server."""
    return {"command": sys.executable, "args": [str(HOSTILE), *args]}


def test_a_server_that_keeps_exiting_is_not_restarted_forever(crab_agent, tmp_path):
    from crab_mcp.subscriptions import MAX_QUICK_RESTARTS

    starts = tmp_path / "starts"
    h = crab_agent(
        [[{"text": "seen"}]],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"rl": server("restless", str(starts))}},
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


def test_a_resource_of_many_images_attaches_a_bounded_number(crab_agent):
    # Each image is within max_image_bytes, but a hundred of them would go to the model at once
    # (and stay in the session, past what a provider accepts in one request).
    from crab_mcp.attach import MAX_IMAGES

    h = crab_agent(
        [[{"text": "seen"}]],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"al": server("album", "100")}},
    )
    assert h.run("look at @al:hostile://album").text == "seen"
    (request,) = h.requests
    context = [m for m in request.messages if isinstance(m, UserMessage)][1]
    assert len(context.images) == MAX_IMAGES
    assert f"[{100 - MAX_IMAGES} more images left out: one message attaches at most {MAX_IMAGES}]" in context.content


def test_a_flood_of_updates_is_read_again_a_bounded_number_of_times(crab_agent, tmp_path):
    # Each "resource updated" made crab read the resource again at once, in a task of its own:
    # 500 notifications, 500 reads in flight. Now one read runs and one more follows it, a second later.
    reads = tmp_path / "reads"
    h = crab_agent(
        [[{"text": "seen"}]],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"ch": server("chatty", str(reads))}},
    )
    watch = crab_mcp._running[id(h.config)].watch
    assert h.run("follow @ch:chatty://news").text == "seen"
    first = len(reads.read_text().split())

    async def quiet() -> None:  # the flood is over and crab's reads of it are done
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not watch.pending or watch._tasks:
                await asyncio.sleep(0.05)
                continue
            await asyncio.sleep(1.0)  # an upper bound for notifications still on their way
            if not watch._tasks:
                return

    h.run_async(quiet())
    again = len(reads.read_text().split()) - first
    assert 1 <= again <= 10, f"{again} reads for 500 updates"
    assert len(watch.pending[h.session.id]) == 1  # the latest only, for the model


def test_a_secret_the_cut_splits_is_masked_whole(crab_agent, monkeypatch):
    # The text was cut at MAX_TEXT first and masked after: the secret's first part, before the
    # cut, no longer matched and went to the model as it was.
    from crab_mcp.attach import MAX_TEXT

    secret = "split-0123456789abcdef-secret"
    monkeypatch.setenv("SPLIT_TEST_TOKEN", secret)
    h = crab_agent(
        [[{"text": "ok"}]], plugins={"mcp": crab_mcp}, config={"plugins.mcp.servers": {"pd": server("padded", "-")}}
    )
    assert h.run(f"look at @pd:hostile://pad/{MAX_TEXT - 10}/{secret}{'y' * 100}").text == "ok"
    (request,) = h.requests
    context = [m for m in request.messages if isinstance(m, UserMessage)][1]
    assert "x" * 1000 in context.content and "[… cut:" in context.content
    assert secret[:10] not in context.content
