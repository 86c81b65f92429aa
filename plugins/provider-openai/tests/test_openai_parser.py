"""The chat-completions parser as a pure state machine, fed recorded fixture bytes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from crab import ProviderError
from crab.events import ErrorEvent, MessageEnd, StreamEvent, TextDelta, ThinkingDelta, ToolCallEvent, UsageEvent
from crab.messages import Usage
from crab.messages import parse_tool_arguments as parse_arguments
from crab_provider_kit import SSEDecoder
from crab_provider_openai.parser import ChatStreamParser, parse_usage

Loader = Callable[[str], bytes]


def parse(data: bytes, parser: ChatStreamParser | None = None, chunk: int = 7) -> list[StreamEvent]:
    """Feed ``data`` in small chunks so every event crosses chunk boundaries."""
    parser = parser or ChatStreamParser("gpt-4.1-mini")
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


def test_text_deltas_usage_and_stop(load_fixture: Loader) -> None:
    events = parse(load_fixture("text_usage.sse"), ChatStreamParser("gpt-4.1-mini"))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", ", wor", "ld!"]
    message = final(events).message
    assert message.content == "Hello, world!"
    assert message.stop_reason == "end"
    assert message.tool_calls == ()
    assert (message.model, message.provider) == ("gpt-4.1-mini", "openai")
    # prompt_tokens includes the 1024 cached ones; crab counts them apart.
    assert message.usage is not None
    assert (message.usage.input_tokens, message.usage.cache_read_tokens, message.usage.output_tokens) == (176, 1024, 4)
    # Usage rides on the final message, unpriced and unannounced: the loop prices and reports it once.
    assert message.usage.cost is None
    assert not [e for e in events if isinstance(e, UsageEvent)]


def test_two_parallel_tool_calls_interleaved_by_index(load_fixture: Loader) -> None:
    events = parse(load_fixture("parallel_tools.sse"))
    message = final(events).message
    assert message.stop_reason == "tool_use"
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("call_weather_paris", "get_weather", {"location": "Paris"}),
        ("call_weather_tokyo", "get_weather", {"location": "Tokyo", "unit": "c"}),
    ]
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert calls == list(message.tool_calls)
    # Tool calls come only at the end, right before MessageEnd.
    assert all(isinstance(e, ToolCallEvent) for e in events[-3:-1])


def test_ids_and_names_repeated_in_every_chunk(load_fixture: Loader) -> None:
    message = final(parse(load_fixture("repeated_ids.sse"))).message
    assert message.content == "Let me look."
    assert len(message.tool_calls) == 1
    call = message.tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("functions.read:0", "read", {"path": "README.md"})
    assert call.parse_error is None


def test_invalid_tool_json_becomes_a_parse_error_not_a_crash(load_fixture: Loader) -> None:
    message = final(parse(load_fixture("invalid_tool_json.sse"))).message
    (call,) = message.tool_calls
    assert call.name == "bash"
    assert call.arguments == {}
    assert call.raw_arguments == '{"command": "ls -la"'
    assert call.parse_error is not None
    assert "not valid JSON" in call.parse_error


def test_missing_index_appends_to_the_last_call_and_a_new_id_starts_one(load_fixture: Loader) -> None:
    message = final(parse(load_fixture("no_index.sse"))).message
    assert [(c.id, c.arguments) for c in message.tool_calls] == [
        ("call_a", {"path": "src"}),
        ("call_b", {"path": "tests"}),
    ]


def test_legacy_function_call_field(load_fixture: Loader) -> None:
    message = final(parse(load_fixture("legacy_function_call.sse"))).message
    (call,) = message.tool_calls
    assert (call.name, call.arguments) == ("glob", {"pattern": "*.py"})
    assert call.id  # generated, since the legacy field has none
    assert message.stop_reason == "tool_use"


def test_reasoning_content_becomes_thinking(load_fixture: Loader) -> None:
    events = parse(load_fixture("reasoning_content.sse"))
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["The user wants 2+2.", " That is 4."]
    message = final(events).message
    assert message.content == "4"
    assert [t.text for t in message.thinking] == ["The user wants 2+2. That is 4."]
    assert message.usage == Usage(input_tokens=20, output_tokens=15, reasoning_tokens=12)


def test_think_tags_split_across_deltas(load_fixture: Loader) -> None:
    events = parse(load_fixture("think_tags.sse"))
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert thinking == "\nCheck the units first."
    assert text == "It is 5 km."
    assert final(events).message.content == "It is 5 km."


def test_think_tags_can_be_switched_off(load_fixture: Loader) -> None:
    events = parse(load_fixture("think_tags.sse"), ChatStreamParser("qwen3", think_tags=False))
    assert final(events).message.content.startswith("<think>")


def test_error_object_in_the_stream_raises_a_typed_error(load_fixture: Loader) -> None:
    parser = ChatStreamParser("m")
    decoder = SSEDecoder()
    (first, _) = decoder.feed(load_fixture("midstream_error.sse"))
    with pytest.raises(ProviderError) as info:
        parser.feed(first)
    assert info.value.kind == "overloaded"
    assert info.value.retryable


def test_context_overflow_inside_the_stream() -> None:
    from crab import ContextOverflowError

    with pytest.raises(ContextOverflowError):
        ChatStreamParser("m").feed_chunk({"error": {"message": "maximum context length is 8192 tokens"}})


def test_non_json_chunk_is_a_stream_error() -> None:
    from crab_provider_kit import ServerSentEvent

    with pytest.raises(ProviderError) as info:
        ChatStreamParser("m").feed(ServerSentEvent("{not json"))
    assert info.value.kind == "stream"


def test_stop_with_tool_calls_means_tool_use_and_reused_index_with_new_id_is_a_new_call() -> None:
    parser = ChatStreamParser("m")
    chunks = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "x"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "b", "function": {"name": "y"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    for chunk in chunks:
        assert parser.feed_chunk(chunk) == []
    message = final(parser.finish()).message
    assert [(c.id, c.name) for c in message.tool_calls] == [("a", "x"), ("b", "y")]
    assert message.stop_reason == "tool_use"


def test_length_finish_means_max_tokens_and_other_choices_are_ignored() -> None:
    parser = ChatStreamParser("m")
    parser.feed_chunk({"choices": [{"index": 1, "delta": {"content": "other"}}]})
    parser.feed_chunk({"choices": [{"index": 0, "delta": {"content": "cut"}, "finish_reason": "length"}]})
    message = final(parser.finish()).message
    assert (message.content, message.stop_reason) == ("cut", "max_tokens")


@pytest.mark.parametrize(
    ("raw", "arguments", "problem"),
    [
        ("", {}, None),
        ('{"a": [1, 2]}', {"a": [1, 2]}, None),
        ("[1, 2]", {}, "must be a JSON object, not list"),
        ('{"a": ', {}, "not valid JSON"),
    ],
)
def test_parse_arguments(raw: str, arguments: dict[str, object], problem: str | None) -> None:
    parsed, error = parse_arguments(raw)
    assert parsed == arguments
    if problem is None:
        assert error is None
    else:
        assert error is not None
        assert problem in error


def test_parse_usage_with_deepseek_cache_hits() -> None:
    usage = parse_usage({"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": 60})
    assert usage == Usage(input_tokens=40, output_tokens=5, cache_read_tokens=60)
