"""OpenAI's own errors over real HTTP on 127.0.0.1: its context-overflow and quota bodies, 529, and
the wording of an unknown model. The faults every HTTP provider shares (statuses, Retry-After,
drops, stalls, a missing ``[DONE]``, the key in no output) are ``ProviderContract``'s, run in
test_openai_contract.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from crab import ContextOverflowError, ModelRequest, ProviderError
from crab.events import MessageEnd, StreamEvent
from crab.messages import UserMessage
from crab_provider_openai.provider import OpenAIProvider

Run = Callable[[OpenAIProvider, ModelRequest], tuple[list[StreamEvent], Exception | None]]
REQUEST = ModelRequest(model="gpt-4.1-mini", system="be brief", messages=(UserMessage("hi"),))


def test_overloaded_529_retries(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(server.error(529, {"error": {"message": "overloaded"}}), server.sse("text_usage.sse"))
    events, error = run_stream(make_provider(), REQUEST)
    assert error is None
    assert isinstance(events[-1], MessageEnd)


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
