"""``crab chat``'s live loop (crab/_cli/chat_live.py) driven by a scripted ``ChatInput``: steering,
follow-ups, Ctrl-C and leaving, with the agent's real loop on the scripted provider."""

from __future__ import annotations

import asyncio
import types
from pathlib import Path

import crab
from crab._cli.chat_live import LEAVE_HINT, live_chat
from crab._cli.chat_sessions import recap
from crab._contracts.renderers import ChatEntry, ChatState


class ScriptedInput:
    """A ``ChatInput`` whose entries the test pushes; it records every refresh's ``ChatState``."""

    def __init__(self, state: ChatState) -> None:
        self.state = state
        self.entries: asyncio.Queue[ChatEntry] = asyncio.Queue()
        self.seen: list[tuple[bool, tuple[str, ...], tuple[str, ...], str]] = []

    async def read(self) -> ChatEntry:
        return await self.entries.get()

    async def ask(self, request: crab.PermissionRequest) -> crab.Answer:
        return "deny"

    def refresh(self) -> None:
        s = self.state
        self.seen.append((s.busy, s.steering, s.follow_ups, s.hint))

    def close(self) -> None:
        return None


def gate_plugin(gate: asyncio.Event) -> object:
    @crab.tool
    async def hold() -> str:
        """Wait for the test."""
        await gate.wait()
        return "released"

    return types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [hold]))


async def until(check, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


def test_enter_during_a_tool_steers_and_alt_enter_follows_up(crab_agent) -> None:
    gate = asyncio.Event()
    harness = crab_agent(
        [[{"tool": "hold"}], [{"text": "steered"}], [{"text": "followed"}]], plugins={"gate": gate_plugin(gate)}
    )
    state = ChatState(workspace=Path.cwd(), history=Path("h"))
    front = ScriptedInput(state)

    async def drive() -> None:
        chat = asyncio.ensure_future(live_chat(harness.agent, harness.session, front, state))
        await front.entries.put(ChatEntry("send", "start"))
        await until(lambda: any(isinstance(e, crab.events.ToolCallEvent) for e in harness.events))
        await front.entries.put(ChatEntry("send", "turn left"))
        await front.entries.put(ChatEntry("follow_up", "then this"))
        await until(lambda: state.steering == ("turn left",) and state.follow_ups == ("then this",))
        assert state.busy
        gate.set()
        await until(lambda: len(harness.requests) == 3 and not state.busy)
        await front.entries.put(ChatEntry("exit"))
        await asyncio.wait_for(chat, 10)

    harness.run_async(drive())
    second, third = harness.requests[1], harness.requests[2]
    assert second.messages[-1] == crab.messages.UserMessage("turn left")
    assert isinstance(second.messages[-2], crab.messages.ToolResultMessage)  # the steer joined after the call
    assert third.messages[-1] == crab.messages.UserMessage("then this")
    assert state.steering == () and state.follow_ups == ()


def test_ctrl_c_aborts_the_turn_then_twice_at_idle_leaves(crab_agent) -> None:
    gate = asyncio.Event()
    harness = crab_agent([[{"tool": "hold"}], [{"text": "after"}]], plugins={"gate": gate_plugin(gate)})
    state = ChatState(workspace=Path.cwd(), history=Path("h"))
    front = ScriptedInput(state)

    async def drive() -> None:
        chat = asyncio.ensure_future(live_chat(harness.agent, harness.session, front, state))
        await front.entries.put(ChatEntry("send", "start"))
        await until(lambda: any(isinstance(e, crab.events.ToolCallEvent) for e in harness.events))
        await front.entries.put(ChatEntry("interrupt"))
        await until(lambda: any(isinstance(e, crab.events.TurnEnded) for e in harness.events) and not state.busy)
        await front.entries.put(ChatEntry("send", "again"))
        await until(lambda: len(harness.events_of(crab.events.TurnEnded)) == 2 and not state.busy)
        await front.entries.put(ChatEntry("interrupt"))
        await until(lambda: state.hint == LEAVE_HINT)
        assert not chat.done()
        await front.entries.put(ChatEntry("interrupt"))
        await asyncio.wait_for(chat, 10)

    harness.run_async(drive())
    first, second = harness.events_of(crab.events.TurnEnded)
    assert first.stop == "aborted" and second.stop == "end"
    # the aborted call was paired: the next request holds its result
    assert isinstance(harness.requests[1].messages[-2], crab.messages.ToolResultMessage)


def test_quit_command_and_exit_while_busy_settle_the_turn(crab_agent) -> None:
    gate = asyncio.Event()
    harness = crab_agent([[{"tool": "hold"}]], plugins={"gate": gate_plugin(gate)})
    state = ChatState(workspace=Path.cwd(), history=Path("h"))
    front = ScriptedInput(state)

    async def drive() -> None:
        chat = asyncio.ensure_future(live_chat(harness.agent, harness.session, front, state))
        await front.entries.put(ChatEntry("send", "start"))
        await until(lambda: any(isinstance(e, crab.events.ToolCallEvent) for e in harness.events))
        await front.entries.put(ChatEntry("send", "/quit"))
        await asyncio.wait_for(chat, 10)

    harness.run_async(drive())
    assert harness.events_of(crab.events.TurnEnded)[-1].stop == "aborted"
    assert harness.events_of(crab.events.ToolResultEvent)  # the open call got its result


def test_recap_shows_the_last_exchanges(crab_agent) -> None:
    harness = crab_agent([[{"text": f"answer {n}"}] for n in range(5)])
    for n in range(5):
        harness.run(f"question {n}")
    text = recap(harness.session, exchanges=2)
    assert text.splitlines() == [
        f"… earlier in session {harness.session.id}:",
        "> question 3",
        "answer 3",
        "> question 4",
        "answer 4",
    ]
    assert recap(types.SimpleNamespace(messages=[], id="x")) == ""  # type: ignore[arg-type]


def test_ctrl_c_stops_a_running_command_that_is_not_a_turn_and_the_chat_goes_on(crab_agent) -> None:
    """A `!cmd` or a plugin's command runs outside a turn, where an abort does not reach it: Ctrl-C
    cancels it (it had only armed the leave hint, and a second Ctrl-C then waited for it)."""
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def hang(ctx, args):  # type: ignore[no-untyped-def]
        started.set()
        try:
            await asyncio.sleep(300)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return crab.CommandResult("never")

    command = crab.Command(name="hang", description="Wait for minutes.", handler=hang)
    plugin = types.SimpleNamespace(crab_commands=crab.hookimpl(lambda config: [command]))
    harness = crab_agent([[{"text": "after"}]], plugins={"hang": plugin})
    state = ChatState(workspace=Path.cwd(), history=Path("h"))
    front = ScriptedInput(state)

    async def drive() -> None:
        chat = asyncio.ensure_future(live_chat(harness.agent, harness.session, front, state))
        await front.entries.put(ChatEntry("send", "/hang"))
        await asyncio.wait_for(started.wait(), 10)
        await front.entries.put(ChatEntry("interrupt"))
        await asyncio.wait_for(cancelled.wait(), 10)
        assert state.hint != LEAVE_HINT and not chat.done()
        await front.entries.put(ChatEntry("send", "still here"))
        await until(lambda: len(harness.events_of(crab.events.TurnEnded)) == 1 and not state.busy)
        started.clear()
        cancelled.clear()
        await front.entries.put(ChatEntry("send", "/hang"))
        await asyncio.wait_for(started.wait(), 10)
        await front.entries.put(ChatEntry("exit"))  # leaving cancels a running command too
        await asyncio.wait_for(chat, 10)
        assert cancelled.is_set()

    harness.run_async(drive())
    assert harness.events_of(crab.events.TurnEnded)[0].stop == "end"
