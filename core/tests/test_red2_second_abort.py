"""Red team (issue 40, second pass): a second abort (Ctrl-C pressed again in ``crab chat``, or a
channel's /stop twice) while the first one is still pairing the open calls must neither leave the
live session with a call the next request sends unanswered, nor lose the turn's end."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Mapping
from typing import Any

import crab
from crab._builtin.memory_store import MemoryStore
from crab._contracts.events import TurnEnded
from crab._values.history import INTERRUPTED, unpaired_calls


class SlowStandIns(MemoryStore):
    """A memory store whose first stand-in result takes a while to write (a busy disk)."""

    def __init__(self) -> None:
        super().__init__()
        self.settling = asyncio.Event()
        self.release = asyncio.Event()

    async def append(self, session_id: str, type: Any, payload: Mapping[str, Any]) -> Any:
        if type == "tool_result" and payload.get("content") == INTERRUPTED and not self.settling.is_set():
            self.settling.set()
            await asyncio.wait_for(self.release.wait(), 30)
        return await super().append(session_id, type, payload)


def test_a_second_abort_while_the_first_settles_leaves_every_call_paired(crab_agent) -> None:
    started = asyncio.Event()

    @crab.tool
    async def slow(n: int) -> str:
        """Take forever."""
        started.set()
        await asyncio.sleep(60)
        return "finished"

    store = SlowStandIns()
    plugin = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [slow]))
    h = crab_agent(
        [[{"tool": "slow", "args": {"n": 1}}, {"tool": "slow", "args": {"n": 2}}], [{"text": "next answer"}]],
        plugins={"p": plugin},
        store=store,
    )

    async def scenario() -> Any:
        task = asyncio.create_task(h.agent.handle_input(h.session, "go"))
        await asyncio.wait_for(started.wait(), 30)
        assert h.agent.abort(h.session)
        await asyncio.wait_for(store.settling.wait(), 30)
        h.agent.abort(h.session)  # pressed again while the first abort writes the stand-ins
        store.release.set()
        return await asyncio.wait_for(task, 30)

    outcome = h.run_async(scenario())
    assert outcome.stop == "aborted"
    assert h.events_of(TurnEnded)[-1].stop == "aborted"
    assert unpaired_calls(h.session.messages) == []
    entries = h.run_async(store.entries(h.session.id))
    assert [e.payload["content"] for e in entries if e.type == "tool_result"] == [INTERRUPTED, INTERRUPTED]
    assert h.run("again").text == "next answer"
    assert unpaired_calls(list(h.requests[-1].messages)) == []
