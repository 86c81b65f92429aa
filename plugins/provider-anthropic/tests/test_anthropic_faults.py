"""Anthropic's own errors over real HTTP on 127.0.0.1: 529 ``overloaded``, its context-overflow
bodies and the wording of an unknown model. The faults every HTTP provider shares (statuses,
Retry-After, drops, stalls, a missing ``message_stop``, the key in no output) are
``ProviderContract``'s, run in test_anthropic_contract.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from crab import ContextOverflowError, ModelRequest, ProviderError
from crab.events import RetryEvent, StreamEvent
from crab.messages import UserMessage
from crab_provider_anthropic.provider import AnthropicProvider

Run = Callable[[AnthropicProvider, ModelRequest], tuple[list[StreamEvent], Exception | None]]
REQUEST = ModelRequest(model="claude-sonnet-4-5", system="be brief", messages=(UserMessage("hi"),))


def api_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def test_529_overloaded_retries_until_attempts_run_out(server: Any, make_provider: Any, run_stream: Run) -> None:
    server.script(*[server.error(529, api_error("overloaded_error", "Overloaded")) for _ in range(2)])
    events, error = run_stream(make_provider(max_retries=1), REQUEST)
    assert isinstance(error, ProviderError)
    assert error.kind == "overloaded"
    assert "gave up after 2 attempts" in str(error)
    assert sum(isinstance(e, RetryEvent) for e in events) == 1


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
