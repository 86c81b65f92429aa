"""The Messages stream parser as a pure state machine, fed recorded fixture bytes."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from crab import ContextOverflowError, ModelInfo, ProviderError
from crab.events import ErrorEvent, MessageEnd, StreamEvent, TextDelta, ThinkingDelta, ToolCallEvent, UsageEvent
from crab.messages import Thinking, Usage, with_cost
from crab_provider_anthropic.parser import MessagesStreamParser
from crab_provider_kit import ServerSentEvent, SSEDecoder

Loader = Callable[[str], bytes]


def parse(data: bytes, parser: MessagesStreamParser | None = None, chunk: int = 5) -> list[StreamEvent]:
    parser = parser or MessagesStreamParser("claude-sonnet-4-5")
    decoder = SSEDecoder()
    events: list[StreamEvent] = []
    for start in range(0, len(data), chunk):
        for sse in decoder.feed(data[start : start + chunk]):
            events.extend(parser.feed(sse))
    assert parser.done
    events.extend(parser.finish())
    return events


def final(events: list[StreamEvent]) -> MessageEnd:
    assert isinstance(events[-1], MessageEnd)
    assert not any(isinstance(e, ErrorEvent) for e in events)
    return events[-1]


def test_text_usage_with_cache_reads_and_writes_unpriced(load_fixture: Loader) -> None:
    events = parse(load_fixture("text_usage.sse"))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", ", world!"]
    message = final(events).message
    assert message.content == "Hello, world!"
    assert message.stop_reason == "end"
    expected = Usage(input_tokens=25, output_tokens=15, cache_read_tokens=2000, cache_write_tokens=1000)
    # Usage rides on the final message, unpriced and unannounced: the loop prices and reports it once.
    assert message.usage == expected
    assert not [e for e in events if isinstance(e, UsageEvent)]
    # What the loop will make of it: cache writes at the model's own cache-write price.
    info = ModelInfo(
        "claude-sonnet-4-5",
        "anthropic",
        input_price=3.0,
        output_price=15.0,
        cache_read_price=0.3,
        cache_write_price=3.75,
    )
    assert with_cost(expected, info).cost == pytest.approx((25 * 3.0 + 15 * 15.0 + 2000 * 0.3 + 1000 * 3.75) / 1e6)


def test_two_tool_calls_with_input_json_deltas(load_fixture: Loader) -> None:
    events = parse(load_fixture("tool_use.sse"))
    message = final(events).message
    assert message.content == "Checking both cities."
    assert message.stop_reason == "tool_use"
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("toolu_01Paris", "get_weather", {"location": "Paris"}),
        ("toolu_02Tokyo", "get_weather", {"location": "Tokyo", "unit": "c"}),
    ]
    assert [e.call for e in events if isinstance(e, ToolCallEvent)] == list(message.tool_calls)
    assert all(isinstance(e, ToolCallEvent) for e in events[-3:-1])


def test_thinking_keeps_its_signature_and_redacted_data(load_fixture: Loader) -> None:
    events = parse(load_fixture("thinking.sse"))
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["2 + 2 is basic", " arithmetic: 4."]
    message = final(events).message
    assert message.content == "4"
    assert message.thinking == (
        Thinking("2 + 2 is basic arithmetic: 4.", signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"),
        Thinking("", signature="EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP", redacted=True),
    )


def test_invalid_tool_json_is_a_parse_error_with_the_raw_text(load_fixture: Loader) -> None:
    message = final(parse(load_fixture("invalid_tool_json.sse"))).message
    (call,) = message.tool_calls
    assert call.arguments == {}
    assert call.raw_arguments == '{"command": "ls -la'
    assert call.parse_error is not None
    assert "not valid JSON" in call.parse_error
    assert message.stop_reason == "max_tokens"


def test_tool_without_arguments_gets_an_empty_object(load_fixture: Loader) -> None:
    (call,) = final(parse(load_fixture("no_input_tool.sse"))).message.tool_calls
    assert (call.name, call.arguments, call.parse_error) == ("current_time", {}, None)


def test_error_event_raises_a_retryable_typed_error(load_fixture: Loader) -> None:
    (sse,) = SSEDecoder().feed(load_fixture("overloaded_error.sse"))
    with pytest.raises(ProviderError) as info:
        MessagesStreamParser("m").feed(sse)
    assert (info.value.kind, info.value.retryable) == ("overloaded", True)


def test_overflow_error_event_is_a_context_overflow() -> None:
    error = {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}
    body = json.dumps({"type": "error", "error": error})
    with pytest.raises(ContextOverflowError):
        MessagesStreamParser("m").feed(ServerSentEvent(body, "error"))


def test_delta_for_an_unknown_block_is_a_stream_error() -> None:
    data = '{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}'
    with pytest.raises(ProviderError) as info:
        MessagesStreamParser("m").feed(ServerSentEvent(data, "content_block_delta"))
    assert info.value.kind == "stream"


def test_unknown_event_types_and_blocks_are_ignored() -> None:
    parser = MessagesStreamParser("m")
    feed = [
        ('{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s","name":"web"}}'),
        ('{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}'),
        ('{"type":"something_new"}'),
        ('{"type":"message_stop"}'),
    ]
    for data in feed:
        assert parser.feed(ServerSentEvent(data)) == []
    message = final(parser.finish()).message
    assert (message.content, message.tool_calls) == ("", ())
