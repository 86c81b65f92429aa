"""``crab_session_end``: dispatched once when a channel leaves a session (``Agent.switch``, a
keyed conversation moving on; ``AgentHandle.end_session``) and for each session still open when
the agent closes."""

from __future__ import annotations

from typing import Any

import crab
from crab._assembly.channel_host import ChannelHost
from crab.testing import AgentHarness


class Recorder:
    """A plugin that writes down every session end it is told of."""

    def __init__(self) -> None:
        self.ended: list[tuple[str, str]] = []

    @crab.hookimpl
    async def crab_session_end(self, session_id: str, reason: str) -> None:
        self.ended.append((session_id, reason))


class Broken:
    def __init__(self) -> None:
        self.calls = 0

    @crab.hookimpl
    def crab_session_end(self, agent: Any) -> None:
        self.calls += 1
        raise RuntimeError("cannot stop my servers")


def test_switching_ends_the_session_left_and_closing_ends_the_one_open(crab_home) -> None:
    recorder = Recorder()
    h = AgentHarness([[{"text": "hi"}]], plugins={"recorder": recorder})
    closed = False
    try:
        h.run("hello")
        first = h.session.id
        outcome = h.run("/new")
        assert outcome.switch_session
        assert recorder.ended == []  # the command names a session; leaving is the channel's move
        h.session = h.run_async(h.agent.switch(h.session, outcome.switch_session))
        assert recorder.ended == [(first, "switch")]
        assert h.run_async(h.agent.switch(h.session, h.session.id)) is h.session  # staying is no switch
        assert h.run_async(h.store.get_session(first)).entry_count  # the old session stays stored
        second = h.session.id
        h.close()
        closed = True
        # Each session ends once: the one left at its switch, the one still open at close.
        assert recorder.ended == [(first, "switch"), (second, "shutdown")]
    finally:
        if not closed:
            h.close()


def test_a_switch_to_a_session_the_store_lacks_leaves_nothing(crab_home) -> None:
    recorder = Recorder()
    h = AgentHarness([], plugins={"recorder": recorder})
    try:
        try:
            h.run_async(h.agent.switch(h.session, "no-such-session"))
        except crab.StoreError:
            pass
        else:
            raise AssertionError("switching to a missing session must fail")
        assert recorder.ended == []  # the old session is still the one in use, with its jobs
    finally:
        h.close()


def test_a_keyed_conversation_moving_on_ends_the_session_it_left(crab_home) -> None:
    recorder = Recorder()
    h = AgentHarness([], plugins={"recorder": recorder}, local=False)
    try:
        host = ChannelHost(h.agent, {})
        chat = h.run_async(host.session_for("chat", "42"))
        outcome = h.run_async(h.agent.handle_input(chat, "/new"))
        moved = h.run_async(host.session_for("chat", "42", session_id=outcome.switch_session))
        assert moved.id == outcome.switch_session
        assert recorder.ended == [(chat.id, "switch")]
        assert h.run_async(host.session_for("chat", "42", session_id=moved.id)) is moved
        assert recorder.ended == [(chat.id, "switch")]
    finally:
        h.close()


def test_a_failing_implementation_is_reported_once_and_dropped(crab_home) -> None:
    broken = Broken()
    h = AgentHarness([], plugins={"broken": broken})
    try:
        first = h.run("/new").switch_session
        assert first
        h.session = h.run_async(h.agent.switch(h.session, first))  # no exception reaches the channel
        second = h.run("/new").switch_session
        assert second
        h.session = h.run_async(h.agent.switch(h.session, second))
    finally:
        h.close()
    assert broken.calls == 1
    warned = [e.message for e in h.events_of(crab.events.NoticeEvent) if e.level == "warning"]
    assert [line for line in warned if "cannot stop my servers" in line] == [
        "plugin broken failed: crab_session_end raised RuntimeError: cannot stop my servers "
        "(its crab_session_end is not called again in this run)"
    ]


class Delegate:
    """A tool that hands its work to a child session (as crab-subagents' ``task`` does)."""

    def __init__(self) -> None:
        self.child = ""

    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        @crab.tool
        async def delegate(ctx: crab.ToolContext) -> str:
            """Ask a child."""
            outcome = await ctx.handle.run_child(ctx, "do it", label="helper")
            self.child = outcome.session_id
            return outcome.text

        return [delegate]


def test_a_child_session_ends_when_its_turn_does(crab_home) -> None:
    recorder, delegate = Recorder(), Delegate()
    replies = [[{"tool": "delegate", "args": {}}], [{"text": "child answer"}], [{"text": "parent answer"}]]
    h = AgentHarness(replies, plugins={"recorder": recorder, "delegate": delegate})
    try:
        assert h.run("go").text == "parent answer"
        assert delegate.child and recorder.ended == [(delegate.child, "child")]
    finally:
        h.close()
    assert recorder.ended == [(delegate.child, "child"), (h.session.id, "shutdown")]


def test_a_channel_ending_a_session_drops_it_and_ends_it_once(crab_home) -> None:
    recorder = Recorder()
    h = AgentHarness([], plugins={"recorder": recorder}, local=False)
    try:
        host = ChannelHost(h.agent, {})
        h.agent.channel_host = host
        chat = h.run_async(host.session_for("http", "one-off"))
        handle = h.handle
        h.run_async(handle.end_session(chat))
        assert recorder.ended == [(chat.id, "end")] and host.sessions == {}
        h.run_async(handle.end_session(chat))  # once
        again = h.run_async(host.session_for("http", "one-off"))
        assert again is not chat and again.id == chat.id  # resumed from the store, a new live session
    finally:
        h.close()
    assert sorted(recorder.ended) == sorted([(chat.id, "end"), (chat.id, "shutdown"), (h.session.id, "shutdown")])
