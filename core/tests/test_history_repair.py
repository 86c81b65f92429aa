"""Resume safety: what goes to the provider is repaired, whatever the stored history looks like."""

from __future__ import annotations

import asyncio

from crab.loop.history import NO_REPLY, NO_RESULT, build_context, repair, unpaired_calls
from crab.memory_store import MemoryStore
from crab.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage, message_to_dict


def call(i: str, name: str = "t") -> ToolCall:
    return ToolCall(i, name, {"n": i})


def test_unpaired_call_gets_a_synthetic_result():
    messages = [UserMessage("hi"), AssistantMessage(tool_calls=(call("a"), call("b")), stop_reason="tool_use")]
    messages.append(ToolResultMessage("a", "t", "ok"))
    fixed = repair(messages)
    assert [type(m).__name__ for m in fixed] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "ToolResultMessage",
    ]
    assert fixed[3] == ToolResultMessage("b", "t", NO_RESULT, is_error=True)
    assert unpaired_calls(fixed) == []


def test_aborted_and_failed_replies_stay_out_of_context():
    aborted = AssistantMessage("half", tool_calls=(call("x"),), stop_reason="aborted")
    failed = AssistantMessage("oops", stop_reason="error", error="boom")
    messages = [UserMessage("one"), aborted, ToolResultMessage("x", "t", "late"), failed, UserMessage("two")]
    fixed = repair(messages)
    assert aborted not in fixed and failed not in fixed
    assert all(not (isinstance(m, ToolResultMessage) and m.call_id == "x") for m in fixed)
    assert fixed == [UserMessage("one"), AssistantMessage(content=NO_REPLY), UserMessage("two")]


def test_results_are_moved_after_their_call_and_duplicates_dropped():
    first = AssistantMessage(tool_calls=(call("a"), call("b")), stop_reason="tool_use")
    messages = [
        UserMessage("q"),
        first,
        ToolResultMessage("b", "t", "B"),
        ToolResultMessage("a", "t", "A"),
        ToolResultMessage("a", "t", "A again"),
        ToolResultMessage("zzz", "t", "orphan"),
        AssistantMessage("done"),
    ]
    fixed = repair(messages)
    assert [m.content for m in fixed if isinstance(m, ToolResultMessage)] == ["A", "B"]
    assert isinstance(fixed[-1], AssistantMessage) and fixed[-1].content == "done"
    assert unpaired_calls(fixed) == []


def test_build_context_from_a_store_with_a_torn_turn():
    async def scenario() -> list:
        store = MemoryStore()
        info = await store.create_session("/w")
        await store.append(info.id, "message", message_to_dict(UserMessage("old")))
        await store.append(info.id, "anchor", {"name": "h1", "kind": "handoff", "state": {}})
        await store.append(info.id, "message", message_to_dict(UserMessage("new")))
        reply = AssistantMessage(tool_calls=(call("c1"),), stop_reason="tool_use")
        await store.append(info.id, "message", message_to_dict(reply))
        await store.append(info.id, "event", {"kind": "model_call"})
        return build_context(await store.entries(info.id, since_handoff=True))

    context = asyncio.run(scenario())
    assert [getattr(m, "content", None) for m in context][:1] == ["new"]
    assert unpaired_calls(context) == []
    assert isinstance(context[-1], ToolResultMessage) and context[-1].is_error


def test_ids_reused_across_replies_still_pair():
    first = AssistantMessage(tool_calls=(call("call_0"),), stop_reason="tool_use")
    second = AssistantMessage(tool_calls=(call("call_0"),), stop_reason="tool_use")
    messages = [
        UserMessage("q"),
        first,
        ToolResultMessage("call_0", "t", "first result"),
        second,
        ToolResultMessage("call_0", "t", "second result"),
        AssistantMessage("done"),
    ]
    fixed = repair(messages)
    assert [m.content for m in fixed if isinstance(m, ToolResultMessage)] == ["first result", "second result"]
    assert unpaired_calls(fixed) == []
    torn = repair(messages[:4])  # the second call's result never made it to disk
    assert [m.content for m in torn if isinstance(m, ToolResultMessage)] == ["first result", NO_RESULT]
