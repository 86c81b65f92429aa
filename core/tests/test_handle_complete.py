"""``AgentHandle.complete``: a plugin asks the model once for a running turn's session, through the
one model-call path (``crab_before_model_call``, the recorded ``model_call`` event, one priced
``UsageEvent``), and the turn's usage includes what it spent."""

from __future__ import annotations

from typing import Any

import crab
import pytest
from crab import AgentHandle, CrabError, ModelRequest, ToolContext
from crab.events import UsageEvent
from crab.messages import ToolResultMessage, UserMessage
from crab.testing import AgentHarness


class Asker:
    """A plugin whose tool asks the model through the handle ``crab_startup`` gave it."""

    def __init__(self) -> None:
        self.handle: AgentHandle | None = None
        self.seen: list[ModelRequest] = []
        self.refuse = False

    @crab.hookimpl
    async def crab_startup(self, agent: AgentHandle) -> None:
        self.handle = agent

    @crab.hookimpl
    def crab_before_model_call(self, request: ModelRequest, session_id: str) -> ModelRequest | None:
        self.seen.append(request)
        if self.refuse and request.system == "be brief":
            raise RuntimeError("not this one")
        return None

    @crab.hookimpl
    def crab_tools(self) -> list[Any]:
        plugin = self

        @crab.tool
        async def consult(question: str, ctx: ToolContext) -> str:
            """Ask the model a side question."""
            assert plugin.handle is not None
            reply = await plugin.handle.complete(
                ctx.session_id, [UserMessage(question)], system="be brief", max_tokens=50
            )
            return f"{reply.stop_reason}: {reply.content or reply.error}"

        return [consult]


def replies(request: ModelRequest) -> list[dict[str, Any]]:
    last = request.messages[-1]
    if request.system == "be brief":
        return [{"text": "forty-two"}, {"usage": {"input_tokens": 7, "output_tokens": 3}}]
    if isinstance(last, UserMessage):
        return [
            {"tool": "consult", "args": {"question": "the answer?"}},
            {"usage": {"input_tokens": 10, "output_tokens": 1}},
        ]
    return [{"text": "done"}, {"usage": {"input_tokens": 20, "output_tokens": 2}}]


def test_complete_goes_through_the_model_call_path_and_counts_in_the_turn() -> None:
    plugin = Asker()
    h = AgentHarness(replies, plugins={"asker": plugin})
    try:
        outcome = h.run("go")
        results = [m for m in h.session.messages if isinstance(m, ToolResultMessage)]
        assert results[0].content == "end: forty-two"
        side = [r for r in h.requests if r.system == "be brief"]
        assert len(side) == 1 and side[0].max_tokens == 50 and side[0].tools == ()
        assert any(r.system == "be brief" for r in plugin.seen)  # crab_before_model_call saw it
        assert len(h.events_of(UsageEvent)) == 3  # each call priced and reported once
        assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (37, 6)
        entries = h.run_async(h.store.entries(h.session.id))
        calls = [e.payload for e in entries if e.type == "event" and e.payload.get("kind") == "model_call"]
        assert [c.get("purpose", "turn") for c in calls] == ["turn", "plugin", "turn"]
    finally:
        h.close()


def test_a_refusing_interceptor_is_the_replys_error() -> None:
    plugin = Asker()
    plugin.refuse = True
    h = AgentHarness(replies, plugins={"asker": plugin})
    try:
        h.run("go")
        results = [m for m in h.session.messages if isinstance(m, ToolResultMessage)]
        assert results[0].content.startswith("error: ")
        assert "not this one" in results[0].content
        assert not [r for r in h.requests if r.system == "be brief"]  # never sent
    finally:
        h.close()


def test_complete_needs_a_running_turn() -> None:
    plugin = Asker()
    h = AgentHarness(replies, plugins={"asker": plugin})
    try:
        assert plugin.handle is not None
        with pytest.raises(CrabError, match="no turn of session"):
            h.run_async(plugin.handle.complete("nope", [UserMessage("hi")]))
    finally:
        h.close()
