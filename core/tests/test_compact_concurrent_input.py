"""Input that arrives while ``/compact`` runs (the live chat reads all the time; a channel's next
message) waits for the compaction instead of racing it: the new turn is neither dropped from the
context nor summarised half-way, and the stored session resumes with it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from crab._contracts.events import CompactionEvent
from crab._contracts.messages import UserMessage
from crab.testing import AgentHarness


def test_a_turn_sent_during_slash_compact_runs_after_it(tmp_path: Path) -> None:
    replies = [
        [{"text": "First answer."}],
        [{"text": "Second answer."}],
        [{"delay": 0.5}, {"text": "SUMMARY: two questions."}],
        [{"text": "Third answer."}],
    ]
    harness = AgentHarness(replies, workspace=tmp_path)
    harness.run("first")
    harness.run("second")

    async def scenario() -> tuple[object, object]:
        compact = asyncio.create_task(harness.agent.handle_input(harness.session, "/compact"))
        while not any(e.phase == "start" for e in harness.events_of(CompactionEvent)):
            await asyncio.sleep(0.005)
        third = asyncio.create_task(harness.agent.handle_input(harness.session, "third"))
        return await asyncio.wait_for(compact, 30), await asyncio.wait_for(third, 30)

    compacted, third = harness.run_async(scenario())
    assert compacted.error is None  # type: ignore[attr-defined]
    assert third.text == "Third answer."  # type: ignore[attr-defined]
    last = harness.requests[-1]
    assert "SUMMARY: two questions." in last.system  # the turn ran after the compaction
    assert [m.content for m in harness.session.messages][-2:] == ["third", "Third answer."]
    resumed = harness.run_async(harness.agent.resume(harness.session.id))
    assert [m.content for m in resumed.messages if isinstance(m, UserMessage)][-1] == "third"
    harness.close()
