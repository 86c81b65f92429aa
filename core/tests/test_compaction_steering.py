"""Steering input (Enter during a turn, ``crab chat``'s live input) that arrives while a threshold
compaction's summary call runs is neither lost nor summarised away: the model reads it verbatim."""

from __future__ import annotations

import asyncio
from pathlib import Path

from crab._contracts.events import CompactionEvent
from crab._contracts.messages import UserMessage
from crab.testing import AgentHarness


def test_steering_during_a_compaction_reaches_the_model(tmp_path: Path) -> None:
    replies = [
        [{"text": "First answer. " + "word " * 600}],
        [{"delay": 0.5}, {"text": "SUMMARY: greeted."}],  # one call, on the session's own request
        [{"tool": "no_such_tool", "args": {}}],
        [{"text": "steered answer"}],
    ]
    # The answer passes the threshold (1,200) beside any system prompt of 440 to 1,200 tokens.
    harness = AgentHarness(replies, workspace=tmp_path, config={"crab.context_window": 1500})
    harness.run("hello")

    async def scenario() -> tuple[object, object]:
        turn = asyncio.create_task(harness.agent.handle_input(harness.session, "and again"))
        while not any(e.phase == "start" for e in harness.events_of(CompactionEvent)):
            await asyncio.sleep(0.005)
        steer = asyncio.create_task(harness.agent.handle_input(harness.session, "use short words", steer=True))
        return await asyncio.wait_for(turn, 30), await asyncio.wait_for(steer, 30)

    outcome, steered = harness.run_async(scenario())
    assert [e.phase for e in harness.events_of(CompactionEvent)] == ["start", "done"]
    assert outcome.text == steered.text == "steered answer"  # type: ignore[attr-defined]
    last = harness.requests[-1]
    users = [m.content for m in last.messages if isinstance(m, UserMessage)]
    assert "and again" in users and "use short words" in users
    assert "SUMMARY: greeted." in last.system
    harness.close()
