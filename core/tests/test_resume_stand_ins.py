"""A resume stores the missing result of a call crab was killed in, once; a real result still wins.

The memory store stands in for any store here (``tests/test_kill_resume_results.py`` kills the
real ``crab`` command on the jsonl and sqlite stores).
"""

from __future__ import annotations

from crab._contracts.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage, message_to_dict
from crab._loop.history import STOPPED, repair, stand_ins, unpaired_calls
from crab.testing import AgentHarness


def stored_results(h: AgentHarness) -> list[tuple[str, str]]:
    entries = h.run_async(h.store.entries(h.session.id))
    return [(e.payload["call_id"], e.payload["content"]) for e in entries if e.type == "tool_result"]


def killed_mid_tool(h: AgentHarness) -> None:
    """What a kill -9 during the second of two calls leaves: the call stored, one result stored."""
    calls = (ToolCall("c1", "bash", {}), ToolCall("c2", "bash", {}))
    reply = AssistantMessage(tool_calls=calls, stop_reason="tool_use")
    for entry_type, message in (
        ("message", UserMessage("run both")),
        ("message", reply),
        ("tool_result", ToolResultMessage("c1", "bash", "one")),
    ):
        h.run_async(h.store.append(h.session.id, entry_type, message_to_dict(message)))


def test_a_resume_stores_the_missing_result_once_and_replays_what_it_stored():
    h = AgentHarness([[{"text": "resumed fine"}]])
    try:
        killed_mid_tool(h)
        resumed = h.run_async(h.agent.resume(h.session.id))
        assert stored_results(h) == [("c1", "one"), ("c2", STOPPED)]
        assert unpaired_calls(resumed.messages) == []
        assert [m.content for m in resumed.messages if isinstance(m, ToolResultMessage)] == ["one", STOPPED]
        again = h.run_async(h.agent.resume(h.session.id))
        assert stored_results(h) == [("c1", "one"), ("c2", STOPPED)]  # once, not on every resume
        assert again.messages == resumed.messages
        h.session = again
        assert h.run("go on").text == "resumed fine"
        assert h.requests[-1].messages[:4] == tuple(resumed.messages)
    finally:
        h.close()


def test_a_paired_session_is_left_as_it_is():
    h = AgentHarness([[{"tool": "t", "args": {}}], [{"text": "done"}]])
    try:
        h.run("go")
        before = h.run_async(h.store.entries(h.session.id))
        h.run_async(h.agent.resume(h.session.id))
        assert h.run_async(h.store.entries(h.session.id)) == before
    finally:
        h.close()


def test_a_real_result_stored_after_the_stand_in_wins():
    # Another process still ran the tool when this one resumed: its answer must not be hidden.
    call = ToolCall("c1", "bash", {})
    messages = [UserMessage("q"), AssistantMessage(tool_calls=(call,), stop_reason="tool_use")]
    (stand_in,) = stand_ins(messages)
    assert stand_in == ToolResultMessage("c1", "bash", STOPPED, is_error=True)
    late = ToolResultMessage("c1", "bash", "the real output")
    fixed = repair([*messages, stand_in, late])
    assert [m for m in fixed if isinstance(m, ToolResultMessage)] == [late]
    assert stand_ins([*messages, stand_in]) == []


def test_shared_ids_get_one_stand_in_per_unanswered_call():
    first = AssistantMessage(tool_calls=(ToolCall("call_0", "t", {}),), stop_reason="tool_use")
    second = AssistantMessage(tool_calls=(ToolCall("call_0", "t", {}),), stop_reason="tool_use")
    messages = [UserMessage("q"), first, ToolResultMessage("call_0", "t", "first"), second]
    missing = stand_ins(messages)
    assert [m.content for m in missing] == [STOPPED]
    fixed = repair([*messages, *missing])
    assert [m.content for m in fixed if isinstance(m, ToolResultMessage)] == ["first", STOPPED]
    assert stand_ins([*messages, *missing]) == []
