"""History as data (docs/library.md#history-as-data): ``result.messages``, ``agent.history(session)``
with compaction anchors marked, ``message_history=`` and the JSON round trip of messages."""

from __future__ import annotations

from pathlib import Path

import crab
import pytest
from crab.testing import ScriptedProvider

QUIET = {"user_config": False, "project_config": False, "environment": False, "plugins": []}


def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


def test_result_messages_are_this_run_s_new_messages_and_round_trip_through_json(crab_home: Path):
    provider = ScriptedProvider(
        [
            [{"text": "first"}],
            [{"tool": "add", "args": {"a": 2, "b": 3}, "id": "c1"}],
            [{"text": "5"}],
        ]
    )
    with crab.Agent(provider=provider, tools=[add], **QUIET) as agent:
        first = agent.run_sync("hello")
        second = agent.run_sync("2 + 3?", session=first.session_id)
    assert first.messages == (
        crab.messages.UserMessage("hello"),
        crab.messages.AssistantMessage("first", model="scripted", provider="mock"),
    )
    kinds = [(type(m).__name__, getattr(m, "content", "")) for m in second.messages]
    assert kinds == [
        ("UserMessage", "2 + 3?"),
        ("AssistantMessage", ""),
        ("ToolResultMessage", "5"),
        ("AssistantMessage", "5"),
    ]
    text = crab.messages.messages_to_json(second.messages)
    assert crab.messages.messages_from_json(text) == list(second.messages)


def test_history_is_the_whole_conversation_with_compaction_anchors_marked(crab_home: Path):
    replies = [[{"text": f"answer {n} " + "words " * 200}] for n in range(4)]
    replies.append([{"text": "A summary of the talk."}])
    provider = ScriptedProvider(replies)
    with crab.Agent(provider=provider, **QUIET) as agent:
        session = agent.run_sync("question 0").session_id
        for n in range(1, 4):
            agent.run_sync(f"question {n}", session=session)
        agent.run_sync("/compact", session=session)
        items = agent.history_sync(session)
    anchors = [item for item in items if isinstance(item, crab.messages.HistoryAnchor)]
    assert len(anchors) == 1 and anchors[0].compaction and anchors[0].summary.startswith("A summary of the talk.")
    prompts = [item.content for item in items if isinstance(item, crab.messages.UserMessage)]
    assert prompts[:4] == ["question 0", "question 1", "question 2", "question 3"]  # nothing left out before it


def test_history_of_an_unknown_session_is_a_usage_error(crab_home: Path):
    with crab.Agent(provider=ScriptedProvider([]), **QUIET) as agent, pytest.raises(crab.UsageError):
        agent.history_sync("20260101T000000-nosuchsession")


def test_a_run_starts_from_a_message_history(crab_home: Path):
    earlier = [
        crab.messages.UserMessage("My name is Ada."),
        crab.messages.AssistantMessage(
            "", tool_calls=(crab.messages.ToolCall("t1", "add", {"a": 1, "b": 1}),), stop_reason="tool_use"
        ),
        crab.messages.ToolResultMessage("t1", "add", "2"),
        crab.messages.AssistantMessage("Nice to meet you, Ada."),
    ]
    provider = ScriptedProvider([[{"text": "You are Ada."}]])
    with crab.Agent(provider=provider, tools=[add], **QUIET) as agent:
        result = agent.run_sync(
            "Who am I?", message_history=crab.messages.messages_from_json(crab.messages.messages_to_json(earlier))
        )
        stored = agent.history_sync(result.session_id)
    assert list(provider.requests[0].messages) == [*earlier, crab.messages.UserMessage("Who am I?")]
    assert stored[:4] == earlier
    assert [type(m).__name__ for m in result.messages] == ["UserMessage", "AssistantMessage"]


def test_a_message_history_must_be_messages_and_a_new_session(crab_home: Path):
    with crab.Agent(provider=ScriptedProvider([]), **QUIET) as agent:
        with pytest.raises(crab.UsageError, match=r"message_history\[1\] is a dict"):
            agent.run_stream("x", message_history=[crab.messages.UserMessage("a"), {"role": "user"}])  # type: ignore[list-item]
        with pytest.raises(crab.UsageError, match="starts a new session"):
            agent.run_stream("x", session="s", message_history=[])
    with pytest.raises(crab.UsageError, match="message 0 cannot be read"):
        crab.messages.messages_from_json('[{"role": "robot"}]')
    with pytest.raises(crab.UsageError, match="not JSON"):
        crab.messages.messages_from_json("[")
