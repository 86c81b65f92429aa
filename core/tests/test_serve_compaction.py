"""Compaction in a keyed channel session under ``ChannelHost`` (``crab serve``): it runs under the
session's budget, a drain that lands while the summary call is in flight leaves the stored session
valid, and a restarted process finds the session and compacts it then."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from crab._assembly.channel_host import ChannelHost
from crab._builtin.memory_store import MemoryStore
from crab._contracts.events import CompactionEvent
from crab._contracts.messages import AssistantMessage, ToolResultMessage
from crab.testing import AgentHarness

WINDOW = {"crab.context_window": 1500}
LONG = "First answer. " + "word " * 600
"""Past the threshold (1,200) beside any system prompt of 440 to 1,200 tokens and longer than the
kept tail (360); summarised in one call on the session's own request."""


class Idle:
    name = "chat"
    local = False

    async def run(self, agent: Any) -> None:
        await asyncio.sleep(3600)


def _paired(messages: list[Any]) -> bool:
    """Every tool call has exactly one result (the loop's invariant)."""
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    results = [m.call_id for m in messages if isinstance(m, ToolResultMessage)]
    return sorted(calls) == sorted(results)


def test_a_drain_during_the_summary_call_leaves_the_keyed_session_valid(tmp_path: Path) -> None:
    store = MemoryStore()
    replies = [[{"text": LONG}], [{"delay": 60}, {"text": "never summarised"}]]
    first = AgentHarness(replies, store=store, workspace=tmp_path, config=WINDOW, local=False)
    host = ChannelHost(first.agent, {"chat": Idle()}, grace=0.2)

    async def scenario() -> Any:
        running = asyncio.create_task(host.run())
        session = await host.session_for("chat", "42")
        await first.agent.handle_input(session, "hello")
        turn = asyncio.create_task(first.agent.handle_input(session, "and again"))
        for _ in range(2000):  # until the summary call is in flight
            if any(e.phase == "start" for e in first.events_of(CompactionEvent)):
                break
            await asyncio.sleep(0.005)
        host.request_stop()
        await asyncio.wait_for(running, 30)
        return session, await asyncio.wait_for(turn, 30)

    session, outcome = first.run_async(scenario())
    assert outcome.stop == "aborted"
    assert [e.phase for e in first.events_of(CompactionEvent)] == ["start"]  # no anchor written
    assert not session.busy and session not in first.agent.busy
    entries = first.run_async(store.entries(session.id))
    assert not [e for e in entries if e.type == "anchor"]
    first.close()

    # A restart finds the conversation, loads a valid history and compacts it on the next turn.
    second = AgentHarness(
        [[{"text": "SUMMARY: greeted twice."}], [{"text": "third answer"}]],
        store=store,
        workspace=tmp_path,
        config=WINDOW,
        local=False,
    )
    host2 = ChannelHost(second.agent, {"chat": Idle()})
    again = second.run_async(host2.session_for("chat", "42"))
    assert again.id == session.id
    assert _paired(list(again.messages))
    answer = second.run_async(second.agent.handle_input(again, "third"))
    assert (answer.stop, answer.text) == ("end", "third answer")
    assert [e.phase for e in second.events_of(CompactionEvent)] == ["start", "done"]
    assert again.budget is not None and again.budget.window == 1500
    reloaded = second.run_async(second.agent.resume(again.id))  # what the next restart sees
    assert _paired(list(reloaded.messages)) and reloaded.messages[-1].content == "third answer"
    assert reloaded.handoff is not None and reloaded.handoff["state"]["summary"] == "SUMMARY: greeted twice."
    second.close()
