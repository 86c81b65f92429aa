"""``ModelCallEvent``: every model call the loop makes, whatever its purpose, is announced once at
its start and once at its end (provider, model, purpose; reply's model, stop reason, error kind,
priced usage), in the event stream that renderers and ``crab_event`` observers get."""

from __future__ import annotations

from typing import Any

import crab


def test_each_model_call_of_a_turn_starts_and_ends_once(crab_agent: Any) -> None:
    h = crab_agent(
        [
            [{"tool": "nope", "args": {}}, {"usage": {"input_tokens": 10, "output_tokens": 2}}],
            [{"text": "done"}, {"usage": {"input_tokens": 20, "output_tokens": 3}}],
        ]
    )
    h.run("go")
    calls = h.events_of(crab.events.ModelCallEvent)
    assert [c.phase for c in calls] == ["start", "end", "start", "end"]
    seen = {(c.session_id, c.provider, c.model, c.purpose) for c in calls}
    assert seen == {(h.session.id, "mock", "scripted", "turn")}
    first_end, last_end = calls[1], calls[3]
    assert first_end.stop_reason == "tool_use" and last_end.stop_reason == "end"
    assert last_end.usage is not None and last_end.usage.input_tokens == 20
    assert last_end.response_model == "scripted" and last_end.error_kind is None
    # The end comes after everything the call streamed, and before the tool result it led to.
    kinds = [type(e) for e in h.events]
    assert kinds.index(crab.events.ToolCallEvent) < kinds.index(
        crab.events.ModelCallEvent, kinds.index(crab.events.ToolCallEvent)
    )
    assert h.events.index(first_end) < kinds.index(crab.events.ToolResultEvent)


def test_a_failed_call_ends_with_its_error_kind(crab_agent: Any) -> None:
    h = crab_agent([[{"error": "too busy", "kind": "overloaded"}]])
    h.run("go")
    end = h.events_of(crab.events.ModelCallEvent)[-1]
    assert end.phase == "end" and end.stop_reason == "error" and end.error_kind == "overloaded"


def test_a_compaction_summary_call_is_announced_with_its_purpose(crab_agent: Any) -> None:
    h = crab_agent([[{"text": "one"}], [{"text": "two"}], [{"text": "Goal: summary"}]])
    h.run("first")
    h.run("second")
    h.run("/compact")
    purposes = [(c.phase, c.purpose) for c in h.events_of(crab.events.ModelCallEvent)]
    assert purposes[-2:] == [("start", "compaction"), ("end", "compaction")]
    assert crab.events.event_to_dict(h.events_of(crab.events.ModelCallEvent)[-1])["type"] == "model_call"
