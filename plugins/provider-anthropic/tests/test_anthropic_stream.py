"""Whole calls over real HTTP on 127.0.0.1: what is sent, what comes back, and no key anywhere."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from crab import ModelRequest, ToolSpec
from crab.events import MessageEnd, StreamEvent, ThinkingDelta, ToolCallEvent, event_to_dict
from crab.messages import UserMessage
from crab_provider_anthropic.provider import AnthropicProvider

Run = Callable[[AnthropicProvider, ModelRequest], tuple[list[StreamEvent], Exception | None]]
TOOL = ToolSpec("get_weather", "Weather.", {"type": "object", "properties": {"location": {"type": "string"}}})


def test_tool_calls_over_http(server: Any, make_provider: Any, run_stream: Run, api_key: str) -> None:
    server.script(server.sse("tool_use.sse"))
    request = ModelRequest("claude-sonnet-4-5", "sys", (UserMessage("weather?"),), (TOOL,), max_tokens=256)
    events, error = run_stream(
        make_provider(models={"claude-sonnet-4-5": {"input_price": 3, "output_price": 15}}), request
    )
    assert error is None
    assert [type(e).__name__ for e in events] == [
        "TextDelta",
        "ToolCallEvent",
        "ToolCallEvent",
        "MessageEnd",
    ]
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [c.id for c in calls] == ["toolu_01Paris", "toolu_02Tokyo"]
    end = events[-1]
    assert isinstance(end, MessageEnd)
    # Prices are configured, but pricing is the loop's: the provider reports raw usage only.
    assert end.message.usage is not None
    assert end.message.usage.cost is None
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.body["system"] == "sys"
    assert sent.body["max_tokens"] == 256
    assert sent.body["tools"][0]["input_schema"] == TOOL.parameters
    assert api_key not in json.dumps([event_to_dict(e) for e in events])


def test_thinking_over_http_round_trips_into_the_next_request(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.sse("thinking.sse"), server.sse("text_usage.sse"))
    provider = make_provider(thinking_budget=2048)
    first = ModelRequest("claude-sonnet-4-5", "", (UserMessage("2+2?"),))
    events, error = run_stream(provider, first)
    assert error is None
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["2 + 2 is basic", " arithmetic: 4."]
    end = events[-1]
    assert isinstance(end, MessageEnd)
    follow_up = ModelRequest("claude-sonnet-4-5", "", (UserMessage("2+2?"), end.message, UserMessage("and 3+3?")))
    _, error = run_stream(provider, follow_up)
    assert error is None
    assert server.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    replayed = server.requests[1].body["messages"][1]["content"]
    assert replayed[0]["type"] == "thinking"
    assert replayed[0]["signature"].startswith("EqQB")
    assert replayed[1] == {"type": "redacted_thinking", "data": end.message.thinking[1].signature}
    assert replayed[2] == {"type": "text", "text": "4"}


def test_invalid_tool_json_over_http_is_returned_not_raised(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.sse("invalid_tool_json.sse"))
    events, error = run_stream(make_provider(), ModelRequest("claude-haiku-4-5", "", (UserMessage("ls"),)))
    assert error is None
    (event,) = [e for e in events if isinstance(e, ToolCallEvent)]
    assert event.call.parse_error is not None
    assert event.call.raw_arguments == '{"command": "ls -la'
