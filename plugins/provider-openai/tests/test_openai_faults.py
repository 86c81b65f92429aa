"""Faults over real HTTP on 127.0.0.1: retries, Retry-After, drops, stalls, missing [DONE], typed errors.

No partial tool call may ever surface: a failed stream yields no ToolCallEvent and no MessageEnd.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
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
from crab_provider_openai.provider import OpenAIProvider

Run = Callable[[OpenAIProvider, ModelRequest], tuple[list[StreamEvent], Exception | None]]
REQUEST = ModelRequest(model="gpt-4.1-mini", system="be brief", messages=(UserMessage("hi"),))


def assert_failed_cleanly(events: list[StreamEvent], key: str) -> ErrorEvent:
    """Ends with one ErrorEvent, and nothing that would make the loop run a tool."""
    assert isinstance(events[-1], ErrorEvent)
    assert sum(isinstance(e, ErrorEvent) for e in events) == 1
    assert not any(isinstance(e, ToolCallEvent | MessageEnd) for e in events)
    assert key not in repr(events)
    return events[-1]


def test_429_with_retry_after_waits_that_long(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(
        server.error(429, {"error": {"message": "Rate limit reached", "type": "requests"}}, {"retry-after": "1"}),
        server.sse("text_usage.sse"),
    )
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    retries = [e for e in events if isinstance(e, RetryEvent)]
    assert len(retries) == 1
    assert retries[0].delay == 1.0
    assert retries[0].attempt == 2
    assert "Rate limit reached" in retries[0].reason
    waited = server.requests[1].at - server.requests[0].at
    assert 0.9 <= waited < 2.5
    assert isinstance(events[-1], MessageEnd)
    assert events[-1].message.content == "Hello, world!"


def test_retry_after_above_the_cap_fails_at_once(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(
        server.error(429, {"error": {"message": "Slow down for an hour"}}, {"retry-after": "3600"}),
        server.sse("text_usage.sse"),
    )
    started = time.monotonic()
    events, error = run_stream(make_provider(retry_cap=60), REQUEST)
    assert time.monotonic() - started < 1.0
    assert isinstance(error, ProviderError)
    assert error.kind == "rate_limit"
    assert "Slow down for an hour" in str(error)
    assert "3600" in str(error)
    assert len(server.requests) == 1
    assert not any(isinstance(e, RetryEvent) for e in events)


def test_retry_after_http_date_form(server: Any, make_provider: Any, run_stream: Run) -> None:
    from email.utils import formatdate

    server.script(
        server.error(503, {"error": {"message": "busy"}}, {"retry-after": formatdate(time.time() + 7200, usegmt=True)}),
    )
    _, error = run_stream(make_provider(), REQUEST)
    assert isinstance(error, ProviderError)
    assert "retry cap" in str(error)


def test_500_then_success(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.error(500, {"error": {"message": "internal"}}), server.sse("parallel_tools.sse"))
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    assert [type(e) for e in events if isinstance(e, RetryEvent)] == [RetryEvent]
    assert isinstance(events[-1], MessageEnd)
    assert len(events[-1].message.tool_calls) == 2


def test_attempts_are_configurable_and_exhaustion_is_raised(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(*[server.error(502, b"bad gateway") for _ in range(3)])
    events, error = run_stream(make_provider(max_retries=2), REQUEST)
    assert isinstance(error, ProviderError)
    assert error.kind == "server"
    assert "gave up after 3 attempts" in str(error)
    assert [e.attempt for e in events if isinstance(e, RetryEvent)] == [2, 3]
    assert len(server.requests) == 3


def test_overloaded_529_retries(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.error(529, {"error": {"message": "overloaded"}}), server.sse("text_usage.sse"))
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    assert isinstance(events[-1], MessageEnd)


def test_connection_reset_before_the_first_byte_retries(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.reset(), server.sse("text_usage.sse"))
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    (retry,) = [e for e in events if isinstance(e, RetryEvent)]
    assert "connection" in retry.reason
    assert isinstance(events[-1], MessageEnd)
    assert len(server.requests) == 2


def test_error_streamed_before_any_content_retries(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.sse("midstream_error.sse"), server.sse("text_usage.sse"))
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    assert sum(isinstance(e, RetryEvent) for e in events) == 1
    assert isinstance(events[-1], MessageEnd)


def test_disconnect_mid_stream_is_an_error_and_no_tool_call_runs(
    server: Any, make_provider: Any, run_stream: Run, api_key: str
) -> None:
    server.script(server.sse("parallel_tools.sse", cut_after=5), server.sse("parallel_tools.sse"))
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    failure = assert_failed_cleanly(events, api_key)
    assert failure.kind == "stream"
    assert "dropped mid-stream" in failure.message
    # Content had streamed, so the call is not retried (a retry would duplicate output).
    assert len(server.requests) == 1


def test_disconnect_after_text_keeps_the_text_events_but_ends_in_error(
    server: Any, make_provider: Any, run_stream: Run, api_key: str
) -> None:
    server.script(server.sse("text_usage.sse", cut_after=3))
    events, _ = run_stream(make_provider(), REQUEST)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", ", wor"]
    assert_failed_cleanly(events, api_key)


def test_missing_done_is_an_error_and_the_tool_call_never_surfaces(
    server: Any, make_provider: Any, run_stream: Run, api_key: str
) -> None:
    server.script(server.sse("missing_done.sse"))
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    failure = assert_failed_cleanly(events, api_key)
    assert "[DONE]" in failure.message
    assert failure.kind == "stream"


def test_idle_stream_times_out_as_an_error(server: Any, make_provider: Any, run_stream: Run, api_key: str) -> None:
    server.script(server.sse("parallel_tools.sse", stall_after=3, stall_seconds=3.0))
    started = time.monotonic()
    events, error = run_stream(make_provider(idle_timeout=0.3), REQUEST)
    assert time.monotonic() - started < 2.0
    assert error is None
    failure = assert_failed_cleanly(events, api_key)
    assert "idle" in failure.message


def test_401_names_the_variable_and_never_the_key(
    server: Any, make_provider: Any, run_stream: Run, api_key: str
) -> None:
    echoed = {"error": {"message": f"Incorrect API key provided: {api_key}", "code": "invalid_api_key"}}
    server.script(server.error(401, echoed))
    events, error = run_stream(make_provider(), REQUEST)
    assert isinstance(error, ProviderError)
    assert error.kind == "auth"
    assert "CRAB_TEST_OPENAI_KEY" in str(error)
    assert api_key not in str(error)
    assert api_key not in repr(events)
    assert len(server.requests) == 1
    # The key did go where it belongs: the request header.
    assert server.requests[0].headers["authorization"] == f"Bearer {api_key}"


def test_unknown_model_says_so(server: Any, make_provider: Any, run_stream: Run) -> None:
    body = {
        "error": {
            "message": "The model `gpt-9` does not exist",
            "type": "invalid_request_error",
            "code": "model_not_found",
        }
    }
    server.script(server.error(404, body))
    _, error = run_stream(make_provider(), ModelRequest(model="gpt-9", system="", messages=(UserMessage("x"),)))
    assert isinstance(error, ProviderError)
    assert error.kind == "model_not_found"
    assert "unknown model 'gpt-9'" in str(error)


@pytest.mark.parametrize(
    "body",
    [
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens.",
                "code": "context_length_exceeded",
            }
        },
        {
            "error": {
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
            }
        },
    ],
)
def test_context_overflow_is_its_own_error_type(server: Any, make_provider: Any, run_stream: Run, body: Any) -> None:
    server.script(server.error(400, body))
    _, error = run_stream(make_provider(), REQUEST)
    assert isinstance(error, ContextOverflowError)
    assert error.kind == "context_overflow"
    assert not error.retryable
    assert len(server.requests) == 1


def test_insufficient_quota_is_not_retried(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.error(429, {"error": {"message": "You exceeded your quota", "code": "insufficient_quota"}}))
    _, error = run_stream(make_provider(), REQUEST)
    assert isinstance(error, ProviderError)
    assert "quota" in str(error)
    assert len(server.requests) == 1


def test_unreachable_server_retries_then_fails(make_provider: Any, run_stream: Run) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = make_provider(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    events, error = run_stream(provider, REQUEST)
    assert isinstance(error, ProviderError)
    assert error.kind == "network"
    assert sum(isinstance(e, RetryEvent) for e in events) == 1


def test_request_too_large_is_a_context_overflow(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.error(413, b"Request Entity Too Large"))
    _, error = run_stream(make_provider(), REQUEST)
    assert isinstance(error, ContextOverflowError)


def test_a_malformed_chunk_ends_as_an_error_not_a_traceback(
    server: Any, make_provider: Any, run_stream: Run, api_key: str
) -> None:
    server.script(server.sse("text_usage.sse"))
    server.replies[0].events.insert(2, b'data: {"choices": "not a list"}\n\n')
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    failure = assert_failed_cleanly(events, api_key)
    assert "malformed stream" in failure.message


def test_the_recorded_overflow_body_is_a_context_overflow(server: Any, make_provider: Any, run_stream: Run) -> None:
    """The loop compacts and retries on ``ContextOverflowError``: the real body must map to it."""
    from pathlib import Path

    text = (Path(__file__).parent / "fixtures" / "context_length_exceeded.body").read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#")).encode()
    server.script(server.error(400, body))
    _, error = run_stream(make_provider(), REQUEST)
    assert isinstance(error, ContextOverflowError)
    assert "maximum context length is 128000 tokens" in str(error)
    assert len(server.requests) == 1
