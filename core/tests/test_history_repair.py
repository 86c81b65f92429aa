"""Resume safety: what goes to the provider is repaired, whatever the stored history looks like."""

from __future__ import annotations

import asyncio

from crab._builtin.memory_store import MemoryStore
from crab._contracts.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from crab._values.history import NO_REPLY, NO_RESULT, build_context, repair, unpaired_calls
from crab._values.message_json import message_to_dict


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
    # Nothing is inserted: the next turn records NO_REPLY itself (so a resume replays the bytes
    # the live session sent); a store written before it keeps its two user messages in a row.
    assert fixed == [UserMessage("one"), UserMessage("two")]
    assert repair([UserMessage("one"), AssistantMessage(NO_REPLY), UserMessage("two")])[1].content == NO_REPLY


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


def test_concurrent_writers_interleave_replies_and_results_yet_every_result_pairs():
    # Two processes appended to one session at once: both replies land before either result.
    first = AssistantMessage(tool_calls=(call("p1-a"),), stop_reason="tool_use")
    second = AssistantMessage(tool_calls=(call("p2-a"),), stop_reason="tool_use")
    messages = [
        UserMessage("one"),
        UserMessage("two"),
        first,
        second,
        ToolResultMessage("p1-a", "t", "A"),
        ToolResultMessage("p2-a", "t", "B"),
        AssistantMessage("done one"),
        AssistantMessage("done two"),
    ]
    fixed = repair(messages)
    results = [m for m in fixed if isinstance(m, ToolResultMessage)]
    assert [(r.call_id, r.content) for r in results] == [("p1-a", "A"), ("p2-a", "B")]
    assert not any(r.content == NO_RESULT for r in results)
    assert unpaired_calls(fixed) == []


def test_a_stored_result_is_never_replaced_by_a_synthetic_one():
    # Every stored result whose call is in context appears, unchanged, in the repaired context.
    calls = [AssistantMessage(tool_calls=(call(f"c{i}"),), stop_reason="tool_use") for i in range(6)]
    results = [ToolResultMessage(f"c{i}", "t", f"R{i}") for i in range(6)]
    messages = [UserMessage("q"), *calls, *reversed(results)]
    fixed = repair(messages)
    assert {m.content for m in fixed if isinstance(m, ToolResultMessage)} == {f"R{i}" for i in range(6)}
    assert unpaired_calls(fixed) == []


def test_reused_ids_pair_by_position_even_when_an_earlier_result_is_missing():
    # A server numbering calls per reply (call_0): the first call's result was never stored, so
    # the second call's result must not be taken by the first call.
    first = AssistantMessage(tool_calls=(call("call_0"),), stop_reason="tool_use")
    second = AssistantMessage(tool_calls=(call("call_0"),), stop_reason="tool_use")
    messages = [UserMessage("q"), first, second, ToolResultMessage("call_0", "t", "second result")]
    fixed = repair(messages)
    assert [m.content for m in fixed if isinstance(m, ToolResultMessage)] == [NO_RESULT, "second result"]
    assert unpaired_calls(fixed) == []


def test_a_result_stored_before_its_call_is_not_paired_with_it():
    # An aborted reply's late result shares its id with a later call; it must not answer that call.
    aborted = AssistantMessage(tool_calls=(call("x"),), stop_reason="aborted")
    later = AssistantMessage(tool_calls=(call("x"),), stop_reason="tool_use")
    fixed = repair([UserMessage("q"), aborted, ToolResultMessage("x", "t", "late"), later])
    assert [m.content for m in fixed if isinstance(m, ToolResultMessage)] == [NO_RESULT]
