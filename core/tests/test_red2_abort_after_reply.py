"""Red team (issue 40, second pass): an abort that lands after the model's reply is recorded but
before the model call is over (while the ``model_call`` event is written) must neither store the
reply a second time (as an aborted partial) nor leave its tool calls without a stored result."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Mapping
from typing import Any

import crab
from crab._builtin.memory_store import MemoryStore
from crab._values.history import INTERRUPTED, unpaired_calls


@crab.tool
def noop() -> str:
    """Do nothing."""
    return "noop"


class SlowModelCallEvent(MemoryStore):
    """A memory store whose write of a ``model_call`` event waits until the test releases it (the
    moment a slow disk or a busy database holds the loop after the reply was stored)."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = asyncio.Event()
        self.hold = True

    async def append(self, session_id: str, type: Any, payload: Mapping[str, Any]) -> Any:
        if self.hold and type == "event" and payload.get("kind") == "model_call":
            self.hold = False
            self.holding.set()
            await asyncio.sleep(60)  # cancelled by the abort
        return await super().append(session_id, type, payload)


def test_an_abort_after_the_reply_is_stored_pairs_its_calls_and_stores_it_once(crab_agent) -> None:
    store = SlowModelCallEvent()
    plugin = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [noop]))
    h = crab_agent(
        [[{"text": "calling"}, {"tool": "noop", "args": {}}], [{"text": "next"}]],
        plugins={"p": plugin},
        store=store,
    )

    async def scenario() -> Any:
        task = asyncio.create_task(h.agent.handle_input(h.session, "go"))
        await asyncio.wait_for(store.holding.wait(), 30)
        assert h.agent.abort(h.session)
        return await task

    outcome = h.run_async(scenario())
    assert outcome.stop == "aborted"
    entries = h.run_async(store.entries(h.session.id))
    replies = [e.payload for e in entries if e.type == "message" and e.payload.get("role") == "assistant"]
    assert [r.get("content") for r in replies] == ["calling"], replies  # stored once, not again as aborted
    (reply,) = replies
    call_ids = [c["id"] for c in reply["tool_calls"]]
    results = [e.payload for e in entries if e.type == "tool_result"]
    assert [r["call_id"] for r in results] == call_ids  # every call has exactly one stored result
    assert results[0]["content"] == INTERRUPTED
    assert unpaired_calls(h.session.messages) == []
    assert h.run("again").text == "next"


def test_an_abort_while_the_next_request_is_prepared_adds_no_result_to_calls_already_run(crab_agent) -> None:
    preparing = asyncio.Event()
    calls = {"n": 0}

    async def crab_before_model_call(request: Any, session_id: str) -> None:
        calls["n"] += 1
        if calls["n"] == 2:  # the request after the tool ran: hold it until the abort
            preparing.set()
            await asyncio.sleep(60)

    plugin = types.SimpleNamespace(
        crab_tools=crab.hookimpl(lambda config: [noop]),
        crab_before_model_call=crab.hookimpl(crab_before_model_call),
    )
    h = crab_agent([[{"text": "calling"}, {"tool": "noop", "args": {}}], [{"text": "never"}]], plugins={"p": plugin})

    async def scenario() -> Any:
        task = asyncio.create_task(h.agent.handle_input(h.session, "go"))
        await asyncio.wait_for(preparing.wait(), 30)
        assert h.agent.abort(h.session)
        return await task

    assert h.run_async(scenario()).stop == "aborted"
    entries = h.run_async(h.store.entries(h.session.id))
    assert [e.payload["content"] for e in entries if e.type == "tool_result"] == ["noop"]
