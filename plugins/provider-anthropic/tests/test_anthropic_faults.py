"""Faults over real HTTP on 127.0.0.1: retries, Retry-After, drops, stalls, missing message_stop,
typed errors. A failed stream yields no ToolCallEvent and no MessageEnd.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from crab import (
    ContextOverflowError,
    ErrorEvent,
    MessageEnd,
    ModelRequest,
    ProviderError,
    RetryEvent,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    UserMessage,
)
from crab_provider_anthropic.provider import AnthropicProvider

Run = Callable[[AnthropicProvider, ModelRequest], tuple[list[StreamEvent], Exception | None]]
REQUEST = ModelRequest(model="claude-sonnet-4-5", system="be brief", messages=(UserMessage("hi"),))


def api_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def assert_failed_cleanly(events: list[StreamEvent], key: str) -> ErrorEvent:
    assert isinstance(events[-1], ErrorEvent)
    assert sum(isinstance(e, ErrorEvent) for e in events) == 1
    assert not any(isinstance(e, ToolCallEvent | MessageEnd) for e in events)
    assert key not in repr(events)
    return events[-1]


def test_429_with_retry_after_waits_that_long(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(
        server.error(429, api_error("rate_limit_error", "Number of requests exceeded"), {"retry-after": "1"}),
        server.sse("text_usage.sse"),
    )
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    (retry,) = [e for e in events if isinstance(e, RetryEvent)]
    assert retry.delay == 1.0
    assert "Number of requests exceeded" in retry.reason
    assert 0.9 <= server.requests[1].at - server.requests[0].at < 2.5
    assert isinstance(events[-1], MessageEnd)


def test_retry_after_above_the_cap_fails_at_once_with_the_servers_message(
    server: Any, make_provider: Any, run_stream: Run
) -> None:
    server.script(server.error(429, api_error("rate_limit_error", "Daily limit reached"), {"retry-after": "120"}))
    started = time.monotonic()
    _, error = run_stream(make_provider(retry_cap=60), REQUEST)
    assert time.monotonic() - started < 1.0
    assert isinstance(error, ProviderError)
    assert "Daily limit reached" in str(error)
    assert "retry cap" in str(error)
    assert len(server.requests) == 1


def test_500_then_success(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.error(500, api_error("api_error", "Internal server error")), server.sse("tool_use.sse"))
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    assert sum(isinstance(e, RetryEvent) for e in events) == 1
    assert isinstance(events[-1], MessageEnd)
    assert len(events[-1].message.tool_calls) == 2


def test_529_overloaded_retries_until_attempts_run_out(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(*[server.error(529, api_error("overloaded_error", "Overloaded")) for _ in range(2)])
    events, error = run_stream(make_provider(max_retries=1), REQUEST)
    assert isinstance(error, ProviderError)
    assert error.kind == "overloaded"
    assert "gave up after 2 attempts" in str(error)
    assert sum(isinstance(e, RetryEvent) for e in events) == 1


def test_overloaded_error_event_before_content_retries(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.sse("overloaded_error.sse"), server.sse("text_usage.sse"))
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    assert sum(isinstance(e, RetryEvent) for e in events) == 1
    assert isinstance(events[-1], MessageEnd)
    assert events[-1].message.content == "Hello, world!"


def test_connection_reset_before_the_first_byte_retries(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.reset(), server.sse("text_usage.sse"))
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    assert sum(isinstance(e, RetryEvent) for e in events) == 1
    assert isinstance(events[-1], MessageEnd)


def test_disconnect_mid_stream_runs_no_tool_call(
    server: Any, make_provider: Any, run_stream: Run, api_key: str
) -> None:
    server.script(server.sse("tool_use.sse", cut_after=8))
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    failure = assert_failed_cleanly(events, api_key)
    assert "dropped mid-stream" in failure.message
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Checking both cities."]
    assert len(server.requests) == 1


def test_missing_message_stop_is_an_error(server: Any, make_provider: Any, run_stream: Run, api_key: str) -> None:
    server.script(server.sse("missing_stop.sse"))
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    failure = assert_failed_cleanly(events, api_key)
    assert "message_stop" in failure.message


def test_idle_stream_times_out(server: Any, make_provider: Any, run_stream: Run, api_key: str) -> None:
    server.script(server.sse("tool_use.sse", stall_after=6, stall_seconds=3.0))
    started = time.monotonic()
    events, error = run_stream(make_provider(idle_timeout=0.3), REQUEST)
    assert time.monotonic() - started < 2.0
    assert error is None
    assert "idle" in assert_failed_cleanly(events, api_key).message


def test_401_names_the_variable_and_never_the_key(
    server: Any, make_provider: Any, run_stream: Run, api_key: str
) -> None:
    server.script(server.error(401, api_error("authentication_error", f"invalid x-api-key {api_key}")))
    events, error = run_stream(make_provider(), REQUEST)
    assert isinstance(error, ProviderError)
    assert error.kind == "auth"
    assert "set CRAB_TEST_ANTHROPIC_KEY" in str(error)
    assert api_key not in str(error)
    assert api_key not in repr(events)
    assert server.requests[0].headers["x-api-key"] == api_key
    assert server.requests[0].headers["anthropic-version"] == "2023-06-01"


def test_unknown_model_says_so(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.error(404, api_error("not_found_error", "model: claude-9")))
    _, error = run_stream(make_provider(), ModelRequest("claude-9", "", (UserMessage("x"),)))
    assert isinstance(error, ProviderError)
    assert error.kind == "model_not_found"
    assert "unknown model 'claude-9'" in str(error)


def test_prompt_too_long_is_a_context_overflow(server: Any, make_provider: Any, run_stream: Run) -> None:
    message = "prompt is too long: 210443 tokens > 200000 maximum"
    server.script(server.error(400, api_error("invalid_request_error", message)))
    _, error = run_stream(make_provider(), REQUEST)
    assert isinstance(error, ContextOverflowError)
    assert len(server.requests) == 1


def test_invalid_request_is_not_retried(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.error(400, api_error("invalid_request_error", "messages: roles must alternate")))
    _, error = run_stream(make_provider(), REQUEST)
    assert isinstance(error, ProviderError)
    assert error.kind == "invalid_request"
    assert "roles must alternate" in str(error)
    assert len(server.requests) == 1


def test_a_malformed_event_ends_as_an_error_not_a_traceback(
    server: Any, make_provider: Any, run_stream: Run, api_key: str
) -> None:
    server.script(server.sse("text_usage.sse"))
    bad = b'event: content_block_start\ndata: {"type":"content_block_start","index":"x","content_block":{}}\n\n'
    server.replies[0].events.insert(2, bad)
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    assert "malformed stream" in assert_failed_cleanly(events, api_key).message


def recorded_body(name: str) -> bytes:
    """A recorded error body from ``fixtures/`` (its ``#`` header, which cites the source, dropped)."""
    from pathlib import Path

    text = (Path(__file__).parent / "fixtures" / name).read_text(encoding="utf-8")
    return "\n".join(line for line in text.splitlines() if not line.startswith("#")).encode()


def test_the_recorded_overflow_bodies_are_context_overflows(server: Any, make_provider: Any, run_stream: Run) -> None:
    """The loop compacts and retries on ``ContextOverflowError``: the real bodies must map to it."""
    for status, name in ((400, "prompt_too_long.body"), (413, "request_too_large.body")):
        server.script(server.error(status, recorded_body(name)))
        _, error = run_stream(make_provider(), REQUEST)
        assert isinstance(error, ContextOverflowError), name
        assert error.kind == "context_overflow" and not error.retryable
    assert len(server.requests) == 2
