"""Whole calls over real HTTP on 127.0.0.1: what is sent, what comes back, and no key anywhere."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from crab import ModelRequest, ToolSpec
from crab.events import MessageEnd, StreamEvent, TextDelta, ToolCallEvent, UsageEvent, event_to_dict
from crab.messages import UserMessage
from crab_provider_openai.provider import OpenAIProvider

Run = Callable[[OpenAIProvider, ModelRequest], tuple[list[StreamEvent], Exception | None]]
TOOL = ToolSpec(
    "get_weather", "Weather for a place.", {"type": "object", "properties": {"location": {"type": "string"}}}
)


def test_parallel_tool_calls_over_http(server: Any, make_provider: Any, run_stream: Run, api_key: str) -> None:
    server.script(server.sse("parallel_tools.sse"))
    request = ModelRequest("gpt-4.1-mini", "sys", (UserMessage("weather?"),), (TOOL,), max_tokens=64, temperature=0.0)
    provider = make_provider(models={"gpt-4.1-mini": {"input_price": 0.4, "output_price": 1.6}})
    events, error = run_stream(provider, request)
    assert error is None
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["ToolCallEvent", "ToolCallEvent", "MessageEnd"]
    end = events[-1]
    assert isinstance(end, MessageEnd)
    assert [c.arguments for c in end.message.tool_calls] == [{"location": "Paris"}, {"location": "Tokyo", "unit": "c"}]
    # Prices are configured, but pricing is the loop's: the provider reports raw usage only.
    assert end.message.usage is not None
    assert end.message.usage.cost is None
    assert not any(isinstance(e, UsageEvent) for e in events)
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.body["messages"][0] == {"role": "system", "content": "sys"}
    assert sent.body["tools"][0]["function"]["name"] == "get_weather"
    assert sent.body["max_tokens"] == 64
    assert sent.body["temperature"] == 0.0
    assert sent.body["stream_options"] == {"include_usage": True}
    assert sent.headers["accept"] == "text/event-stream"
    dumped = json.dumps([event_to_dict(e) for e in events])
    assert api_key not in dumped


def test_repeated_ids_over_http(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.sse("repeated_ids.sse"))
    events, error = run_stream(make_provider(), ModelRequest("kimi-k2", "", (UserMessage("read it"),)))
    assert error is None
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [("functions.read:0", "read", {"path": "README.md"})]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Let me look."]


def test_invalid_tool_json_over_http_is_returned_not_raised(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.sse("invalid_tool_json.sse"))
    events, error = run_stream(make_provider(), ModelRequest("gpt-4.1-mini", "", (UserMessage("ls"),)))
    assert error is None
    (call_event,) = [e for e in events if isinstance(e, ToolCallEvent)]
    assert call_event.call.parse_error is not None
    assert call_event.call.raw_arguments == '{"command": "ls -la"'
    assert isinstance(events[-1], MessageEnd)
    assert events[-1].message.stop_reason == "tool_use"


def test_a_local_server_without_a_key_gets_no_authorization_header(
    server: Any, run_stream: Run, isolated_home: Any
) -> None:
    server.script(server.sse("think_tags.sse"))
    provider = OpenAIProvider({"base_url": server.url}, env={})
    events, error = run_stream(provider, ModelRequest("qwen3", "", (UserMessage("how far?"),)))
    assert error is None
    assert "authorization" not in server.requests[0].headers
    assert isinstance(events[-1], MessageEnd)
    assert events[-1].message.content == "It is 5 km."
    assert events[-1].message.thinking[0].text == "\nCheck the units first."
